// rms_norm(x [..., D], w [D]) = x / sqrt(mean(x^2) + eps) * w   (Zhang & Sennrich 2019, RMSNorm).
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_norm(const InferArgs& a) {
  if (a.inputs.size() != 2) return node_error(a, "expects (x, weight)");
  const Node& x = *a.inputs[0];
  const Node& w = *a.inputs[1];
  if (x.dtype != DType::F32 || w.dtype != DType::F32) return node_error(a, "x and weight must be f32");
  if (x.shape.empty() || w.shape.size() != 1 || !(w.shape[0] == x.shape.back()) ||
      x.shape.back().is_symbolic())
    return node_error(a, fmt::format("weight {} does not match the last axis of {}", shape_to_string(w.shape),
                                     shape_to_string(x.shape)));
  return TypeInfo{x.shape, DType::F32};
}

Tensor decompose_rms_norm(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const float eps = std::get<RmsNormAttrs>(n.attrs).eps;
  const Tensor x = in[0];
  const auto dim = static_cast<float>(x.shape().back().value);
  const Tensor mean_sq = b.reduce_sum(x * x) * b.scalar(1.0f / dim);
  const Tensor inv_rms = b.recip(b.sqrt(mean_sq + b.scalar(eps)));
  return x * inv_rms * in[1];
}

}  // namespace glass::graph
