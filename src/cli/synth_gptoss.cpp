// glass synth's gpt-oss shape: llama.cpp's gpt-oss tensors and keys (src/models/openai-moe.cpp,
// conversion/gpt_oss.py), the experts as MXFP4 blocks as its converter writes them.
#include <fmt/format.h>

#include "cli/synth_gguf.h"

namespace glass::cli::synth {

// Per layer attention with q/k/v/o biases and a sink per head, the post-attention norm, the router
// with its bias, and the experts (gate, up, down, MXFP4) with their biases; an untied output.
std::vector<Tensor> gptoss_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const int64_t E = s.n_expert, F = s.ffn_dim, D = s.dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, D}, true, 0.02f},
                        {"output_norm.weight", {D}, false, 0.0f},
                        {"output.weight", {vocab_size, D}, true, 0.02f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}", i, w); };
    t.push_back({blk("attn_norm.weight"), {D}, false, 0.0f});
    t.push_back({blk("attn_q.weight"), {q_dim, D}, true, 0.02f});
    t.push_back({blk("attn_q.bias"), {q_dim}, false, 0.02f});
    t.push_back({blk("attn_k.weight"), {kv_dim, D}, true, 0.02f});
    t.push_back({blk("attn_k.bias"), {kv_dim}, false, 0.02f});
    t.push_back({blk("attn_v.weight"), {kv_dim, D}, true, 0.02f});
    t.push_back({blk("attn_v.bias"), {kv_dim}, false, 0.02f});
    t.push_back({blk("attn_output.weight"), {D, q_dim}, true, 0.02f});
    t.push_back({blk("attn_output.bias"), {D}, false, 0.02f});
    t.push_back({blk("attn_sinks.weight"), {s.n_heads}, false, 0.5f});
    t.push_back({blk("post_attention_norm.weight"), {D}, false, 0.0f});
    t.push_back({blk("ffn_gate_inp.weight"), {E, D}, false, 0.02f});
    t.push_back({blk("ffn_gate_inp.bias"), {E}, false, 0.02f});
    Tensor gate{blk("ffn_gate_exps.weight"), {E, F, D}, true, 0.0f},
        up{blk("ffn_up_exps.weight"), {E, F, D}, true, 0.0f},
        down{blk("ffn_down_exps.weight"), {E, D, F}, true, 0.0f};
    gate.mxfp4 = up.mxfp4 = down.mxfp4 = true;
    t.push_back(gate);
    t.push_back({blk("ffn_gate_exps.bias"), {E, F}, false, 0.02f});
    t.push_back(up);
    t.push_back({blk("ffn_up_exps.bias"), {E, F}, false, 0.02f});
    t.push_back(down);
    t.push_back({blk("ffn_down_exps.bias"), {E, D}, false, 0.02f});
  }
  return t;
}

void gptoss_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  m.u32("gpt-oss.context_length", u(s.n_ctx));
  m.u32("gpt-oss.embedding_length", u(s.dim));
  m.u32("gpt-oss.block_count", u(s.n_layers));
  m.u32("gpt-oss.feed_forward_length", u(s.ffn_dim));
  m.u32("gpt-oss.attention.head_count", u(s.n_heads));
  m.u32("gpt-oss.attention.head_count_kv", u(s.n_kv_heads));
  m.u32("gpt-oss.attention.key_length", u(s.head_dim));
  m.u32("gpt-oss.attention.value_length", u(s.head_dim));
  m.u32("gpt-oss.rope.dimension_count", u(s.head_dim));
  m.f32("gpt-oss.rope.freq_base", s.rope_base);
  m.str("gpt-oss.rope.scaling.type", "yarn");
  m.f32("gpt-oss.rope.scaling.factor", s.yarn_factor);
  m.u32("gpt-oss.rope.scaling.original_context_length", u(s.yarn_orig_ctx));
  m.f32("gpt-oss.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.u32("gpt-oss.attention.sliding_window", u(s.sliding_window));
  m.u32("gpt-oss.expert_count", u(s.n_expert));
  m.u32("gpt-oss.expert_used_count", u(s.n_expert_used));
  m.u32("gpt-oss.expert_feed_forward_length", u(s.ffn_dim));
  m.u32("gpt-oss.vocab_size", u(vocab_size));
}

}  // namespace glass::cli::synth
