// Fused matmuls, made by the fusion rewrites (graph/fuse.h) so a backend can compute a linear layer
// and what consumes it in one pass over the weights:
//   matmul_add(x, w, r)             = matmul(x, w) + r                      (residual in the epilogue)
//   matmul_swiglu(x, w_gate, w_up) = swiglu(matmul(x, w_gate), matmul(x, w_up))
//   matmul_geglu(x, w_gate, w_up)  = geglu(matmul(x, w_gate), matmul(x, w_up))
// x is f32 [..., M, K]; the weights are 2-D [N, K] in any storage dtype (gate and up alike); r is
// f32 [..., M, N]. The decomposition is the unfused expression, down to primitives.
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_fused_matmul(const InferArgs& a) {
  if (a.inputs.size() != 3)
    return node_error(a, a.node.op == Op::MatMulAdd ? "expects (x, w, r)" : "expects (x, w_gate, w_up)");
  // The product's type is matmul's (its errors name this node).
  auto t = infer_matmul(InferArgs{a.node, {a.inputs[0], a.inputs[1]}, a.label});
  if (!t) return t.error();
  if (a.inputs[1]->shape.size() != 2) return node_error(a, "weights must be 2-D [N, K]");
  const Node& third = *a.inputs[2];
  if (a.node.op == Op::MatMulAdd) {
    if (third.dtype != DType::F32 || !(third.shape == t->shape))
      return node_error(a, fmt::format("residual must be f32{}, got {}{}", shape_to_string(t->shape),
                                       dtype_name(third.dtype), shape_to_string(third.shape)));
    return t;
  }
  if (!(third.shape == a.inputs[1]->shape) || third.dtype != a.inputs[1]->dtype)
    return node_error(a, fmt::format("gate and up weights differ: {}{} vs {}{}",
                                     dtype_name(a.inputs[1]->dtype), shape_to_string(a.inputs[1]->shape),
                                     dtype_name(third.dtype), shape_to_string(third.shape)));
  return t;
}

Tensor decompose_fused_matmul(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const Tensor y = b.matmul(in[0], in[1]);
  switch (n.op) {
    case Op::MatMulAdd:
      return y + in[2];
    case Op::MatMulGeGlu:
      return decompose_gelu(b, y) * b.matmul(in[0], in[2]);
    default:
      return decompose_silu(b, y) * b.matmul(in[0], in[2]);
  }
}

}  // namespace glass::graph
