// matmul(a [..., M, K], w [..., N, K]) -> [..., M, N]: out[m, n] = sum_k a[m, k] * w[n, k].
// The second operand is row-major like GGUF weights, so a linear layer is matmul(x, weight);
// it may be stored in any dtype (f16, bf16, quantized blocks along K). Batch dims broadcast.
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_matmul(const InferArgs& a) {
  if (a.inputs.size() != 2) return node_error(a, "expects 2 inputs");
  const Node& x = *a.inputs[0];
  const Node& w = *a.inputs[1];
  if (x.dtype != DType::F32)
    return node_error(a, fmt::format("activations must be f32, got {}", dtype_name(x.dtype)));
  if (w.dtype == DType::I32 || w.dtype == DType::I8) return node_error(a, "weights cannot be integer");
  if (x.shape.size() < 2 || w.shape.size() < 2) return node_error(a, "operands need rank >= 2");
  const Dim& k = x.shape.back();
  if (!(k == w.shape.back()))
    return node_error(a, fmt::format("inner dimensions differ: {} x {}", shape_to_string(x.shape),
                                     shape_to_string(w.shape)));
  if (traits(w.dtype).block_size > 1 && (k.is_symbolic() || k.value % traits(w.dtype).block_size != 0))
    return node_error(a, fmt::format("inner dimension {} is not a multiple of {}'s block size {}",
                                     dim_to_string(k), dtype_name(w.dtype), traits(w.dtype).block_size));
  const size_t bx = x.shape.size() - 2;
  const size_t bw = w.shape.size() - 2;
  const size_t nb = std::max(bx, bw);
  Shape out(nb + 2);
  for (size_t i = 0; i < nb; ++i) {
    const Dim one = Dim::constant(1);
    const Dim dx = i < nb - bx ? one : x.shape[i - (nb - bx)];
    const Dim dw = i < nb - bw ? one : w.shape[i - (nb - bw)];
    if (dx == dw || dw == one) {
      out[i] = dx;
    } else if (dx == one) {
      out[i] = dw;
    } else {
      return node_error(a, fmt::format("batch dimensions of {} and {} do not broadcast",
                                       shape_to_string(x.shape), shape_to_string(w.shape)));
    }
  }
  out[nb] = x.shape[x.shape.size() - 2];
  out[nb + 1] = w.shape[w.shape.size() - 2];
  return TypeInfo{out, DType::F32};
}

}  // namespace glass::graph
