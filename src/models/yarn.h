#pragma once
// YaRN (Peng et al. 2023, "YaRN: Efficient Context Window Extension of Large Language Models") as
// llama.cpp applies it (ggml rope_yarn, llama_context's yarn_attn_factor): pair i of a head rotates at
// the angle p theta_i (s (1 - r_i) + r_i), s = 1 / factor, r_i the ramp that is 1 below the
// correction dimension of beta_fast and 0 above that of beta_slow; cos and sin are scaled by
// attn_factor (1 + 0.1 ln factor). The angle stays linear in the position, so the graph's RoPE with
// per-pair frequency divisors computes it, and the scale multiplies the rotated q and k.
#include <cstdint>
#include <vector>

namespace glass::models {

struct YarnParams {
  int64_t n_rot = 0;  // rotated dimensions (pairs: n_rot / 2)
  float freq_base = 10000.0f;
  float factor = 1.0f;     // rope.scaling.factor
  int64_t n_ctx_orig = 0;  // rope.scaling.original_context_length
  float beta_fast = 32.0f, beta_slow = 1.0f;
  float attn_factor = 1.0f;  // rope.scaling.attn_factor
};

struct YarnRope {
  std::vector<float> divisors;  // [n_rot / 2]: the RoPE op's freq_factors
  float scale = 1.0f;           // multiplies the rotated q and k
};

YarnRope yarn_rope(const YarnParams& p);

}  // namespace glass::models
