// The gated delta rule (Yang, Kautz, Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with
// Delta Rule"), Qwen 3.5's and Qwen3-Next's linear attention. Each sequence keeps, per value head h,
// a state matrix S_h [D, D] (key dim x value dim) in its slot of a pool; token t of the sequence
// updates it and reads it:
//   S_h <- exp(g[t, h]) * S_h                                 (gated decay)
//   S_h <- S_h + k_t (beta[t, h] * (v_t - S_h^T k_t))^T        (delta rule: write v_t under key k_t)
//   o[t, h] = S_h^T q_t / sqrt(D)
// with q_t, k_t from key head h % Hk (key heads tiled over the value heads, as llama.cpp's converter
// orders them), or h / (Hv / Hk) with the grouped_heads attribute (HF checkpoints' order).
//   delta_net(q [T, Hk, D], k [T, Hk, D], v [T, Hv, D], g [T, Hv], beta [T, Hv],
//             state [R, Hv, D, D], q_seq [T], slots [N]) -> o [T, Hv, D]
//   delta_net_state(state, k, v, g, beta, q_seq, slots, after) -> state [R, Hv, D, D]
// Token t belongs to sequence q_seq[t], whose state is slot slots[q_seq[t]]; a sequence's tokens are
// consecutive in the step and in position order, and start from the state the slot holds.
// delta_net reads the slots and leaves them; delta_net_state writes each sequence's state after its
// last token of the step into its slot (in place in backends) and reads `after` (delta_net's
// output) only so that it runs after the outputs were computed from the old states. The state is
// stored with S_h transposed: state[r, h, j, i] = S_h[i][j] (a value index's row over the keys).
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_delta_net(const InferArgs& a) {
  const bool out = a.node.op == Op::DeltaNet;
  if (a.inputs.size() != 8)
    return node_error(a, out ? "expects (q, k, v, g, beta, state, q_seq, slots)"
                             : "expects (state, k, v, g, beta, q_seq, slots, after)");
  const Node& q = *a.inputs[0 + (out ? 0 : 1)];  // delta_net_state has no q: k stands in for its shape
  const Node& k = *a.inputs[1];
  const Node& v = *a.inputs[2];
  const Node& g = *a.inputs[3];
  const Node& beta = *a.inputs[4];
  const Node& state = *a.inputs[out ? 5 : 0];
  const Node& q_seq = *a.inputs[out ? 6 : 5];
  const Node& slots = *a.inputs[out ? 7 : 6];
  for (const Node* n : {&q, &k, &v, &g, &beta, &state})
    if (n->dtype != DType::F32) return node_error(a, "q, k, v, g, beta and the state must be f32");
  if (k.shape.size() != 3 || !(q.shape == k.shape) || k.shape[1].is_symbolic() || k.shape[2].is_symbolic())
    return node_error(a, "q and k must be [T, Hk, D] alike");
  if (v.shape.size() != 3 || !(v.shape[0] == k.shape[0]) || !(v.shape[2] == k.shape[2]) ||
      v.shape[1].is_symbolic() || v.shape[1].value % k.shape[1].value != 0)
    return node_error(a, fmt::format("v must be [T, Hv, D] with Hv a multiple of Hk: got {} for k {}",
                                     shape_to_string(v.shape), shape_to_string(k.shape)));
  const Shape per_head{v.shape[0], v.shape[1]};
  if (!(g.shape == per_head) || !(beta.shape == per_head)) return node_error(a, "g and beta must be [T, Hv]");
  if (state.shape.size() != 4 || !(state.shape[1] == v.shape[1]) || !(state.shape[2] == v.shape[2]) ||
      !(state.shape[3] == v.shape[2]))
    return node_error(a, fmt::format("state must be [R, Hv, D, D], got {}", shape_to_string(state.shape)));
  if (q_seq.dtype != DType::I32 || q_seq.shape != Shape{v.shape[0]})
    return node_error(a, "q_seq must be i32 [T]");
  if (slots.dtype != DType::I32 || slots.shape.size() != 1) return node_error(a, "slots must be i32 [N]");
  if (!out && !(a.inputs[7]->shape == v.shape))
    return node_error(a, "after must be delta_net's output [T, Hv, D]");
  return out ? TypeInfo{v.shape, DType::F32} : TypeInfo{state.shape, DType::F32};
}

}  // namespace glass::graph
