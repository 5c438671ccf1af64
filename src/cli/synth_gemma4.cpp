// glass synth's Gemma 4 shapes: llama.cpp's gemma4 tensors and keys (src/models/gemma4.cpp,
// conversion/gemma.py), as its converter writes the E2B / E4B text models.
#include <fmt/format.h>

#include "cli/synth_gguf.h"

namespace glass::cli::synth {
namespace {

bool is_local(const Shape& s, int64_t layer) { return (layer + 1) % s.global_every != 0; }

}  // namespace

// Per layer attention with q/k norms (the cache-owning layers' k and v), the GeGLU MLP (twice as
// wide in the KV-sharing layers with double_wide_mlp), the per-layer input's gate and projection and
// the layer's output scale; the per-layer embeddings and their projection; rope_freqs, the global
// layers' proportional RoPE (a quarter of each head's pairs rotate).
std::vector<Tensor> gemma4_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t ple = s.n_layers * s.per_layer_dim, n_kv_layers = s.n_layers - s.kv_shared;
  const int64_t pairs = s.global_head_dim / 2, rotating = s.global_head_dim / 8;
  std::vector<float> freqs(static_cast<size_t>(pairs), 1e30f);
  std::fill(freqs.begin(), freqs.begin() + rotating, 1.0f);
  std::vector<Tensor> t{
      {"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
      {"per_layer_token_embd.weight", {vocab_size, ple}, true, 0.02f},
      {"per_layer_model_proj.weight", {ple, s.dim}, true, 0.02f},
      {"per_layer_proj_norm.weight", {s.per_layer_dim}, false, 0.0f},
      {"rope_freqs.weight", {pairs}, false, 0.0f, 1.0f, freqs},
      {"output_norm.weight", {s.dim}, false, 0.0f},
  };
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    const bool local = is_local(s, i);
    const int64_t hd = local ? s.head_dim : s.global_head_dim;
    const int64_t kv_dim = (local ? s.n_kv_heads : s.global_kv_heads) * hd, q_dim = s.n_heads * hd;
    const int64_t ffn = s.double_wide_mlp && i >= n_kv_layers ? 2 * s.ffn_dim : s.ffn_dim;
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("attn_q"), {q_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_q_norm"), {hd}, false, 0.0f});
    if (i < n_kv_layers) {
      t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_k_norm"), {hd}, false, 0.0f});
      t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
    }
    t.push_back({blk("attn_output"), {s.dim, q_dim}, true, 0.02f});
    t.push_back({blk("post_attention_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {ffn, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {ffn, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, ffn}, true, 0.02f});
    t.push_back({blk("post_ffw_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("inp_gate"), {s.per_layer_dim, s.dim}, true, 0.02f});
    t.push_back({blk("proj"), {s.dim, s.per_layer_dim}, true, 0.02f});
    t.push_back({blk("post_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("layer_output_scale"), {1}, false, 0.0f});
  }
  return t;
}

void gemma4_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const auto layers = static_cast<size_t>(s.n_layers);
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  const int64_t n_kv_layers = s.n_layers - s.kv_shared;
  std::vector<int32_t> ffn(layers), kv(layers);
  std::vector<bool> sliding(layers);
  for (size_t i = 0; i < layers; ++i) {
    const auto layer = static_cast<int64_t>(i);
    sliding[i] = is_local(s, layer);
    kv[i] = static_cast<int32_t>(sliding[i] ? s.n_kv_heads : s.global_kv_heads);
    ffn[i] = static_cast<int32_t>(s.double_wide_mlp && layer >= n_kv_layers ? 2 * s.ffn_dim : s.ffn_dim);
  }
  m.u32("gemma4.context_length", u(s.n_ctx));
  m.u32("gemma4.embedding_length", u(s.dim));
  m.u32("gemma4.block_count", u(s.n_layers));
  m.i32s("gemma4.feed_forward_length", ffn);
  m.u32("gemma4.attention.head_count", u(s.n_heads));
  m.i32s("gemma4.attention.head_count_kv", kv);
  m.f32("gemma4.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.u32("gemma4.attention.key_length", u(s.global_head_dim));
  m.u32("gemma4.attention.value_length", u(s.global_head_dim));
  m.u32("gemma4.attention.key_length_swa", u(s.head_dim));
  m.u32("gemma4.attention.value_length_swa", u(s.head_dim));
  m.u32("gemma4.rope.dimension_count", u(s.global_head_dim));
  m.u32("gemma4.rope.dimension_count_swa", u(s.head_dim));
  m.f32("gemma4.rope.freq_base", s.rope_base);
  m.f32("gemma4.rope.freq_base_swa", s.rope_base_swa);
  m.u32("gemma4.attention.sliding_window", u(s.sliding_window));
  m.bools("gemma4.attention.sliding_window_pattern", sliding);
  m.u32("gemma4.attention.shared_kv_layers", u(s.kv_shared));
  m.u32("gemma4.embedding_length_per_layer_input", u(s.per_layer_dim));
  m.f32("gemma4.final_logit_softcapping", 30.0f);
  m.u32("gemma4.vocab_size", u(vocab_size));
}

}  // namespace glass::cli::synth
