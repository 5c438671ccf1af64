// silu(x) = x * sigmoid(x) (Elfwing et al. 2017); swiglu(gate, up) = silu(gate) * up
// (Shazeer 2020, GLU variants), the gated MLP of Llama.
// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks & Gimpel 2016, tanh form);
// geglu(gate, up) = gelu(gate) * up (Shazeer 2020), the gated MLP of Gemma.
// softcap(x) = cap * tanh(x / cap) (Gemma 2's logit soft-capping). Scalar forms: formulas.h.
#include "graph/ops/formulas.h"
#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_activation(const InferArgs& a) {
  const size_t want = a.node.op == Op::SwiGlu || a.node.op == Op::GeGlu ? 2 : 1;
  if (a.inputs.size() != want) return node_error(a, "wrong number of inputs");
  for (const Node* in : a.inputs)
    if (in->dtype != DType::F32) return node_error(a, "operands must be f32");
  if (want == 2 && !(a.inputs[0]->shape == a.inputs[1]->shape))
    return node_error(a, "gate and up shapes differ: " + shape_to_string(a.inputs[0]->shape) + " vs " +
                             shape_to_string(a.inputs[1]->shape));
  if (a.node.op == Op::Softcap && !(std::get<SoftcapAttrs>(a.node.attrs).cap > 0.0f))
    return node_error(a, "cap must be positive");
  return TypeInfo{a.inputs[0]->shape, DType::F32};
}

Tensor decompose_softcap(Builder& b, Tensor x, float cap) {
  return b.tanh(x / b.scalar(cap)) * b.scalar(cap);
}

Tensor decompose_silu(Builder& b, Tensor g) { return g * b.recip(b.scalar(1.0f) + b.exp(b.neg(g))); }

Tensor decompose_gelu(Builder& b, Tensor g) {
  const Tensor inner = (g + g * g * g * b.scalar(kGeluCubic)) * b.scalar(kGeluSqrt2OverPi);
  return b.scalar(0.5f) * g * (b.scalar(1.0f) + b.tanh(inner));
}

Tensor decompose_activation(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const Tensor g = in[0];
  switch (n.op) {
    case Op::Softcap:
      return decompose_softcap(b, g, std::get<SoftcapAttrs>(n.attrs).cap);
    case Op::Gelu:
      return decompose_gelu(b, g);
    case Op::GeGlu:
      return decompose_gelu(b, g) * in[1];
    case Op::SwiGlu:
      return decompose_silu(b, g) * in[1];
    default:
      return decompose_silu(b, g);
  }
}

}  // namespace glass::graph
