// Mixture-of-experts feed-forward (Shazeer et al. 2017, "Outrageously Large Neural Networks"; the
// top-k softmax routing of Mixtral and Qwen-MoE). For token t with router probabilities p[t, :]:
//   chosen = the n_used experts of largest p[t, e] (ties: the lower index first)
//   w_e    = p[t, e] for e in chosen, divided by sum over chosen of p[t, e] when `normalize`
//   out[t] = sum over e in chosen of w_e * s_e * down_e(act(gate_e x[t]) * up_e x[t])
// with act SiLU (SwiGLU) or tanh-GELU (GeGLU) and s_e the optional per-expert scale (1 without it);
// SwiGluOai (gpt-oss) computes formulas.h's swiglu_oai(gate_e x, up_e x) instead of act(g) * u. With
// biases (inputs 5-7, gpt-oss) gate_e x, up_e x and down_e(...) each add their expert's bias row.
// Experts are stacked: gate/up [n_expert, ffn, dim], down [n_expert, dim, ffn], any storage dtype;
// with fused_gate_up the gate input is [n_expert, 2 ffn, dim], each expert's gate rows then its up
// rows, and the up input is the same tensor.
// A kernel computes only the chosen experts; the reference decomposition below computes every
// expert densely and weights the unchosen ones by 0 (the definition, not a way to run it).
#include <fmt/format.h>

#include <limits>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_moe(const InferArgs& a) {
  if (a.inputs.size() != 5 && a.inputs.size() != 6 && a.inputs.size() != 8)
    return node_error(a,
                      "expects (x, probs, gate_exps, up_exps, down_exps[, expert_scale | gate_bias, up_bias, "
                      "down_bias])");
  const Node& x = *a.inputs[0];
  const Node& p = *a.inputs[1];
  const Node& gate = *a.inputs[2];
  const Node& up = *a.inputs[3];
  const Node& down = *a.inputs[4];
  const auto& m = std::get<MoeAttrs>(a.node.attrs);
  if (x.dtype != DType::F32 || x.shape.size() != 2 || x.shape[1].is_symbolic())
    return node_error(a, "x must be f32 [T, dim]");
  if (gate.shape.size() != 3 || up.shape.size() != 3 || down.shape.size() != 3)
    return node_error(a, "experts must be 3-D: gate/up [n_expert, ffn, dim], down [n_expert, dim, ffn]");
  const Dim& E = gate.shape[0];
  const Dim& D = x.shape[1];
  if (m.fused_gate_up &&
      (a.node.inputs[2] != a.node.inputs[3] || gate.shape[1].is_symbolic() || gate.shape[1].value % 2 != 0))
    return node_error(a, "fused_gate_up expects one [n_expert, 2 ffn, dim] tensor as both gate and up");
  const Dim F = m.fused_gate_up ? Dim::constant(gate.shape[1].value / 2) : gate.shape[1];
  if (E.is_symbolic() || F.is_symbolic() || !(gate.shape[2] == D) || !(up.shape == gate.shape) ||
      !(down.shape == Shape{E, D, F}))
    return node_error(
        a, fmt::format("expert shapes gate {} up {} down {} do not match x {}", shape_to_string(gate.shape),
                       shape_to_string(up.shape), shape_to_string(down.shape), shape_to_string(x.shape)));
  if (p.dtype != DType::F32 || !(p.shape == Shape{x.shape[0], E}))
    return node_error(a, fmt::format("router probabilities must be f32 [T, {}], got {}", E.value,
                                     shape_to_string(p.shape)));
  if (a.inputs.size() == 8)
    for (size_t i = 5; i < 8; ++i)
      if (a.inputs[i]->dtype != DType::F32 || !(a.inputs[i]->shape == Shape{E, i == 7 ? D : F}))
        return node_error(
            a, fmt::format("expert biases must be f32 gate/up [{0}, {1}] and down [{0}, {2}], got {3}",
                           E.value, F.value, D.value, shape_to_string(a.inputs[i]->shape)));
  if (a.inputs.size() == 6 && (a.inputs[5]->dtype != DType::F32 || !(a.inputs[5]->shape == Shape{E})))
    return node_error(a, fmt::format("expert_scale must be f32 [{}], got {}", E.value,
                                     shape_to_string(a.inputs[5]->shape)));
  if (m.n_used < 1 || m.n_used > E.value)
    return node_error(a, fmt::format("n_used {} must be within [1, {}]", m.n_used, E.value));
  for (const Node* w : {&gate, &up, &down}) {
    if (w->dtype == DType::I32 || w->dtype == DType::I8) return node_error(a, "experts cannot be integer");
    const int64_t k = w->shape[2].value, block = traits(w->dtype).block_size;
    if (k % block != 0)
      return node_error(a, fmt::format("expert rows of {} are not a multiple of {}'s block size {}", k,
                                       dtype_name(w->dtype), block));
  }
  return TypeInfo{x.shape, DType::F32};
}

Tensor decompose_moe(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const auto& m = std::get<MoeAttrs>(n.attrs);
  const Tensor x = in[0], p = in[1];
  const Dim T = x.shape()[0], D = x.shape()[1];
  const Dim E = in[2].shape()[0];

  // Routing weights [T, E]: the n_used largest probabilities, found by repeated max, the rest 0.
  const Tensor taken = b.scalar(-std::numeric_limits<float>::max());
  Tensor remaining = p;
  Tensor mask;
  for (int j = 0; j < m.n_used; ++j) {
    const Tensor hit = b.less_equal(b.reduce_max(remaining), remaining);  // 1 at this round's maximum
    mask = j == 0 ? hit : mask + hit;
    remaining = b.where(hit, taken, remaining);
  }
  Tensor w = p * mask;
  if (m.normalize) w = w / b.reduce_sum(w);

  // Every expert densely: [1, T, dim] x [E, ffn, dim] -> [E, T, ffn], then down -> [E, T, dim].
  const Tensor xb = b.reshape(x, Shape{Dim::constant(1), T, D});
  Tensor g = b.matmul(xb, in[2]), u = b.matmul(xb, in[3]);
  if (m.fused_gate_up) {  // [E, T, 2 ffn]: gate columns, then up columns
    const int64_t F = in[2].shape()[1].value / 2;
    g = b.slice(g, 2, 0, Dim::constant(F));
    u = b.slice(u, 2, F, Dim::constant(F));
  }
  const bool biased = in.size() == 8;
  const Dim one = Dim::constant(1);
  if (biased) {  // [E, 1, ffn] per expert
    const Dim F = in[5].shape()[1];
    g = g + b.reshape(in[5], Shape{E, one, F});
    u = u + b.reshape(in[6], Shape{E, one, F});
  }
  Tensor h;
  if (m.activation == MoeActivation::GeGlu) {
    h = b.gelu(g) * u;
  } else if (m.activation == MoeActivation::SwiGluOai) {
    const Tensor limit = b.scalar(7.0f), neg_limit = b.scalar(-7.0f);
    const Tensor gl = b.where(b.less_equal(g, limit), g, limit);
    const Tensor up =
        b.where(b.less_equal(u, neg_limit), neg_limit, b.where(b.less_equal(u, limit), u, limit));
    h = gl * b.recip(b.scalar(1.0f) + b.exp(b.neg(gl * b.scalar(1.702f)))) * (up + b.scalar(1.0f));
  } else {
    h = g * b.recip(b.scalar(1.0f) + b.exp(b.neg(g))) * u;
  }
  Tensor y = b.matmul(h, in[4]);  // [E, T, dim]
  if (biased) y = y + b.reshape(in[7], Shape{E, one, D});

  if (in.size() == 6) w = w * in[5];  // [T, E] x [E]: each expert's scale
  const Tensor we = b.reshape(b.permute(w, {1, 0}), Shape{E, T, Dim::constant(1)});
  const Tensor sum = b.reduce_sum(b.permute(y * we, {1, 2, 0}));  // [T, dim, 1]
  return b.reshape(sum, Shape{T, D});
}

}  // namespace glass::graph
