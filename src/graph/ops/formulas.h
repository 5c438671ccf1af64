#pragma once
// Scalar forms of the composite formulas that fused kernels apply element by element. The graph
// decompositions (graph/ops/*.cpp) build the same expressions from primitives; kernels include
// this header rather than restating a formula, so each lives in one place. Internal linkage on
// purpose: per-ISA kernel files (compiled with -mavx2 / -mavx512f) include it, and an out-of-line
// copy built for a wide ISA must never be shared with code that runs on a narrower one.
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
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(kGeluSqrt2OverPi * (x + kGeluCubic * x * x * x)));
}

}  // namespace
}  // namespace glass::graph
