#include "models/yarn.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace glass::models {
namespace {

// The dimension whose wavelength fits `rotations` times in the original context (ggml's
// ggml_rope_yarn_corr_dim).
float correction_dim(int64_t n_rot, int64_t n_ctx_orig, float rotations, float base) {
  return static_cast<float>(n_rot) *
         std::log(static_cast<float>(n_ctx_orig) / (rotations * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

}  // namespace

YarnRope yarn_rope(const YarnParams& p) {
  YarnRope y;
  const auto pairs = static_cast<size_t>(p.n_rot / 2);
  y.divisors.assign(pairs, 1.0f);
  if (!(p.factor > 1.0f)) {
    y.scale = p.attn_factor;
    return y;
  }
  const float s = 1.0f / p.factor;
  const float low =
      std::max(0.0f, std::floor(correction_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base)));
  const float high = std::min(static_cast<float>(p.n_rot - 1),
                              std::ceil(correction_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base)));
  for (size_t i = 0; i < pairs; ++i) {
    const float ramp =
        1.0f - std::clamp((static_cast<float>(i) - low) / std::max(0.001f, high - low), 0.0f, 1.0f);
    y.divisors[i] = 1.0f / (s * (1.0f - ramp) + ramp);
  }
  y.scale = p.attn_factor * (1.0f + 0.1f * std::log(p.factor));
  return y;
}

}  // namespace glass::models
