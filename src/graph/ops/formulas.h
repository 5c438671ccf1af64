#pragma once
// Scalar forms of the composite formulas that fused kernels apply element by element. The graph
// decompositions (graph/ops/*.cpp) build the same expressions from primitives; kernels include
// this header rather than restating a formula, so each lives in one place. Internal linkage on
// purpose: per-ISA kernel files (compiled with -mavx2 / -mavx512f) include it, and an out-of-line
// copy built for a wide ISA must never be shared with code that runs on a narrower one.
#include <algorithm>
#include <cmath>

namespace glass::graph {
namespace {  // NOLINT(google-build-namespaces): see above

// Gemma 2 soft-capping: cap * tanh(x / cap), a smooth clamp of a logit to (-cap, cap). Used by the
// softcap op (final logits) and by attention's softcap attribute (attention scores).
inline float softcap(float x, float cap) { return cap * std::tanh(x / cap); }

// GELU, tanh approximation (Hendrycks & Gimpel 2016), as Gemma's gelu_pytorch_tanh:
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline constexpr float kGeluSqrt2OverPi = 0.7978845608028654f;
inline constexpr float kGeluCubic = 0.044715f;
// gpt-oss's clamped SwiGLU: min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1), as
// ggml_swiglu_oai computes it.
inline float swiglu_oai(float g, float u) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  const float x = std::min(g, kLimit);
  const float y = std::clamp(u, -kLimit, kLimit);
  return x / (1.0f + std::exp(kAlpha * (-x))) * (y + 1.0f);
}

inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

}  // namespace
}  // namespace glass::graph
