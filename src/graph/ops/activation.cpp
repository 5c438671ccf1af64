// silu(x) = x * sigmoid(x) (Elfwing et al. 2017); swiglu(gate, up) = silu(gate) * up
// (Shazeer 2020, GLU variants), the gated MLP of Llama.
#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_activation(const InferArgs& a) {
  const size_t want = a.node.op == Op::SwiGlu ? 2 : 1;
  if (a.inputs.size() != want) return node_error(a, "wrong number of inputs");
  for (const Node* in : a.inputs)
    if (in->dtype != DType::F32) return node_error(a, "operands must be f32");
  if (want == 2 && !(a.inputs[0]->shape == a.inputs[1]->shape))
    return node_error(a, "gate and up shapes differ: " + shape_to_string(a.inputs[0]->shape) + " vs " +
                             shape_to_string(a.inputs[1]->shape));
  return TypeInfo{a.inputs[0]->shape, DType::F32};
}

Tensor decompose_activation(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const Tensor g = in[0];
  const Tensor silu = g * b.recip(b.scalar(1.0f) + b.exp(b.neg(g)));
  return n.op == Op::SwiGlu ? silu * in[1] : silu;
}

}  // namespace glass::graph
