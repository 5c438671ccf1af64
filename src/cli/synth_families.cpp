// glass synth's tensor tables and metadata keys of the llama, LFM2, Gemma 3n and Qwen 3.5 shapes
// (synth_gguf.h).
#include <fmt/format.h>

#include "cli/synth_gguf.h"

namespace glass::cli::synth {

std::vector<Tensor> llama_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t head_dim = s.dim / s.n_heads, kv_dim = s.n_kv_heads * head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"output_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("attn_q"), {s.dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_output"), {s.dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

// The keys of the llama graph, under the shape's architecture ("llama", "smollm3", "lfm2").
void llama_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const std::string a = s.arch;
  m.u32(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  m.u32(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  m.u32(a + ".embedding_length", static_cast<uint32_t>(s.dim));
  m.u32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn_dim));
  m.u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  if (s.layer_kinds == nullptr) {
    m.u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
    m.u32(a + ".rope.dimension_count", static_cast<uint32_t>(s.dim / s.n_heads));
  } else {  // lfm2: kv heads per layer, 0 for the convolutions
    std::vector<int32_t> kv;
    for (const char* k = s.layer_kinds; *k != 0; ++k)
      kv.push_back(*k == 'a' ? static_cast<int32_t>(s.n_kv_heads) : 0);
    m.i32s(a + ".attention.head_count_kv", kv);
    m.u32(a + ".shortconv.l_cache", static_cast<uint32_t>(s.conv_width));
  }
  m.u32(a + ".vocab_size", static_cast<uint32_t>(vocab_size));
  m.f32(a + ".rope.freq_base", s.rope_base);
  m.f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
}

// LFM2's tensors (llama.cpp's lfm2 names): per layer a short convolution (in_proj to B | C | x, the
// [dim, L] taps, out_proj) or attention with q/k norms, then the SwiGLU MLP; the final norm is
// token_embd_norm, the output tied.
std::vector<Tensor> lfm2_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t head_dim = s.dim / s.n_heads, kv_dim = s.n_kv_heads * head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"token_embd_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    if (s.layer_kinds[i] == 'a') {
      t.push_back({blk("attn_q"), {s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_output"), {s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_q_norm"), {head_dim}, false, 0.0f});
      t.push_back({blk("attn_k_norm"), {head_dim}, false, 0.0f});
    } else {
      t.push_back({blk("shortconv.in_proj"), {3 * s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("shortconv.conv"), {s.dim, s.conv_width}, false, 0.3f});
      t.push_back({blk("shortconv.out_proj"), {s.dim, s.dim}, true, 0.02f});
    }
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

// Gemma 3n's tensors under llama.cpp's names (src/llama-arch.cpp LLM_ARCH_GEMMA3N), shapes outermost
// first: the per-layer embeddings (one 256-wide row per layer per token) and their projection from the
// residual, AltUp's projections into and out of its extra streams, and per layer attention with q/k
// norms, a GELU FFN, the per-layer input gate and projection, AltUp's router and coefficients and
// LAuReL's low-rank pair.
std::vector<Tensor> gemma3n_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const int64_t ple = s.n_layers * s.per_layer_dim, n = s.altup_inputs;
  std::vector<Tensor> t{
      {"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
      {"per_layer_token_embd.weight", {vocab_size, ple}, true, 0.02f},
      {"per_layer_model_proj.weight", {ple, s.dim}, true, 0.02f},
      {"per_layer_proj_norm.weight", {s.per_layer_dim}, false, 0.0f},
      {"altup_proj.weight", {n - 1, s.dim, s.dim}, true, 0.02f},
      {"altup_unembd_proj.weight", {n - 1, s.dim, s.dim}, true, 0.02f},
  };
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("attn_q"), {q_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_output"), {s.dim, q_dim}, true, 0.02f});
    t.push_back({blk("attn_q_norm"), {s.head_dim}, false, 0.0f});
    t.push_back({blk("attn_k_norm"), {s.head_dim}, false, 0.0f});
    t.push_back({blk("post_attention_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
    t.push_back({blk("post_ffw_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("inp_gate"), {s.per_layer_dim, s.dim}, true, 0.02f});
    t.push_back({blk("proj"), {s.dim, s.per_layer_dim}, true, 0.02f});
    t.push_back({blk("post_norm"), {s.dim}, false, 0.0f});
    // Small F32 tensors in llama.cpp's conversions: coefficients, router, scales.
    t.push_back({blk("altup_correct_coef"), {n, n}, false, 0.02f});
    t.push_back({blk("altup_correct_scale"), {s.dim}, false, 0.0f});
    t.push_back({blk("altup_predict_coef"), {n * n, n}, false, 0.02f});
    t.push_back({blk("altup_router"), {n, s.dim}, false, 0.02f});
    t.push_back({blk("altup_router_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("laurel_l"), {s.laurel_rank, s.dim}, true, 0.02f});
    t.push_back({blk("laurel_r"), {s.dim, s.laurel_rank}, true, 0.02f});
    t.push_back({blk("laurel_post_norm"), {s.dim}, false, 0.0f});
  }
  t.push_back({"output_norm.weight", {s.dim}, false, 0.0f});
  return t;
}

// Qwen 3.5's tensors (llama.cpp's qwen35 names): Gated DeltaNet layers (qkv, z gate, conv1d taps,
// dt bias, A (negative), beta and alpha projections, per-head norm, out) and gated attention layers
// (q with its gate, k, v, out, q/k norms), each with the post-attention norm and a SwiGLU MLP; tied.
std::vector<Tensor> qwen35_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t key_dim = s.delta_k_heads * s.delta_dim, value_dim = s.delta_v_heads * s.delta_dim;
  const int64_t conv_dim = 2 * key_dim + value_dim, q_dim = s.n_heads * s.head_dim;
  const int64_t kv_dim = s.n_kv_heads * s.head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"output_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w, const char* part = ".weight") {
      return fmt::format("blk.{}.{}{}", i, w, part);
    };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("post_attention_norm"), {s.dim}, false, 0.0f});
    if ((i + 1) % s.global_every == 0) {
      t.push_back({blk("attn_q"), {2 * q_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_output"), {s.dim, q_dim}, true, 0.02f});
      t.push_back({blk("attn_q_norm"), {s.head_dim}, false, 0.0f});
      t.push_back({blk("attn_k_norm"), {s.head_dim}, false, 0.0f});
    } else {
      t.push_back({blk("attn_qkv"), {conv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_gate"), {value_dim, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_conv1d"), {conv_dim, s.conv_width}, false, 0.3f});
      t.push_back({blk("ssm_dt", ".bias"), {s.delta_v_heads}, false, 0.3f});
      t.push_back({blk("ssm_a", ""), {s.delta_v_heads}, false, 0.0f, -1.0f});
      t.push_back({blk("ssm_beta"), {s.delta_v_heads, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_alpha"), {s.delta_v_heads, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_norm"), {s.delta_dim}, false, 0.0f});
      t.push_back({blk("ssm_out"), {s.dim, value_dim}, true, 0.02f});
    }
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

void qwen35_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  m.u32("qwen35.block_count", u(s.n_layers));
  m.u32("qwen35.context_length", u(s.n_ctx));
  m.u32("qwen35.embedding_length", u(s.dim));
  m.u32("qwen35.feed_forward_length", u(s.ffn_dim));
  m.u32("qwen35.attention.head_count", u(s.n_heads));
  m.u32("qwen35.attention.head_count_kv", u(s.n_kv_heads));
  m.u32("qwen35.attention.key_length", u(s.head_dim));
  m.u32("qwen35.attention.value_length", u(s.head_dim));
  m.f32("qwen35.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.f32("qwen35.rope.freq_base", s.rope_base);
  m.u32("qwen35.rope.dimension_count", u(s.n_rot));
  const auto third = static_cast<int32_t>(s.n_rot / 2 / 3);
  m.i32s("qwen35.rope.dimension_sections",
         {static_cast<int32_t>(s.n_rot / 2) - 2 * third, third, third, 0});  // [12, 10, 10, 0] at 64
  m.u32("qwen35.ssm.conv_kernel", u(s.conv_width));
  m.u32("qwen35.ssm.state_size", u(s.delta_dim));
  m.u32("qwen35.ssm.group_count", u(s.delta_k_heads));
  m.u32("qwen35.ssm.time_step_rank", u(s.delta_v_heads));
  m.u32("qwen35.ssm.inner_size", u(s.delta_v_heads * s.delta_dim));
  m.u32("qwen35.full_attention_interval", u(s.global_every));
  m.u32("qwen35.vocab_size", u(vocab_size));
}

void gemma3n_keys(const Shape& s, Meta& m) {
  const auto layers = static_cast<size_t>(s.n_layers);
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  m.u32("gemma3n.context_length", u(s.n_ctx));
  m.u32("gemma3n.embedding_length", u(s.dim));
  m.i32s("gemma3n.feed_forward_length", std::vector<int32_t>(layers, static_cast<int32_t>(s.ffn_dim)));
  m.u32("gemma3n.block_count", u(s.n_layers));
  m.u32("gemma3n.attention.head_count", u(s.n_heads));
  m.u32("gemma3n.attention.head_count_kv", u(s.n_kv_heads));
  m.f32("gemma3n.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.u32("gemma3n.attention.key_length", u(s.head_dim));
  m.u32("gemma3n.attention.value_length", u(s.head_dim));
  m.f32("gemma3n.rope.freq_base", s.rope_base);
  m.f32("gemma3n.rope.freq_base_swa", s.rope_base_swa);
  m.u32("gemma3n.attention.sliding_window", u(s.sliding_window));
  m.f32("gemma3n.final_logit_softcapping", 30.0f);
  m.u32("gemma3n.altup.active_idx", 0);
  m.u32("gemma3n.altup.num_inputs", u(s.altup_inputs));
  m.u32("gemma3n.embedding_length_per_layer_input", u(s.per_layer_dim));
  m.u32("gemma3n.attention.shared_kv_layers", u(s.kv_shared));
  // activation_sparsity_pattern 0.95 for the first layers: the scale is the standard normal's 0.95
  // quantile as a float32 inverse error function gives it (1.6448533; exactly 1.6448536), 0 where
  // the FFN is dense.
  std::vector<float> sparsity(layers, 0.0f);
  std::vector<bool> sliding(layers);
  for (size_t i = 0; i < layers; ++i) {
    if (static_cast<int64_t>(i) < s.sparse_layers) sparsity[i] = 1.6448533535003662f;
    sliding[i] = (static_cast<int64_t>(i) + 1) % s.global_every != 0;
  }
  m.f32s("gemma3n.activation_sparsity_scale", sparsity);
  m.bools("gemma3n.attention.sliding_window_pattern", sliding);
}

}  // namespace glass::cli::synth
