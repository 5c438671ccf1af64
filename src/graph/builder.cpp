#include "graph/builder.h"

#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

const Shape& Tensor::shape() const { return b->node(id).shape; }
DType Tensor::dtype() const { return b->node(id).dtype; }

Tensor Tensor::named(const std::string& name) const {
  if (b->ok() && id >= 0) b->mutable_node(id).name = name;
  return *this;
}

Tensor operator+(Tensor a, Tensor c) { return a.b->add(a, c); }
Tensor operator-(Tensor a, Tensor c) { return a.b->sub(a, c); }
Tensor operator*(Tensor a, Tensor c) { return a.b->mul(a, c); }
Tensor operator/(Tensor a, Tensor c) { return a.b->div(a, c); }

void Builder::fail(Error e) {
  if (!error_) error_ = std::move(e);
}

Tensor Builder::add_node(Op op, std::vector<NodeId> inputs, Attrs attrs, Shape declared_shape,
                         DType declared_dtype, std::string name) {
  if (error_) return Tensor{this, -1};
  const auto id = static_cast<NodeId>(g_.nodes.size());
  Node n{op, std::move(inputs), std::move(attrs), std::move(declared_shape), declared_dtype, std::move(name)};
  InferArgs args{n, {}, n.name.empty() ? fmt::format("%{}", id) : n.name};
  for (NodeId in : n.inputs) {
    if (in < 0 || in >= id) {
      fail(node_error(args, fmt::format("input %{} does not precede the node", in)));
      return Tensor{this, -1};
    }
    args.inputs.push_back(&g_.nodes[static_cast<size_t>(in)]);
  }
  auto info = infer(args);
  if (!info) {
    fail(info.error());
    return Tensor{this, -1};
  }
  n.shape = std::move(info->shape);
  n.dtype = info->dtype;
  g_.nodes.push_back(std::move(n));
  return Tensor{this, id};
}

Tensor Builder::input(const std::string& name, Shape shape, DType dtype) {
  return add_node(Op::Input, {}, LeafAttrs{name}, std::move(shape), dtype, name);
}
Tensor Builder::parameter(const std::string& name, Shape shape, DType dtype) {
  return add_node(Op::Parameter, {}, LeafAttrs{name}, std::move(shape), dtype, name);
}
Tensor Builder::state(const std::string& name, Shape shape, DType dtype) {
  return add_node(Op::State, {}, LeafAttrs{name}, std::move(shape), dtype, name);
}
Tensor Builder::constant(std::vector<float> values, Shape shape) {
  return add_node(Op::Constant, {}, ConstantAttrs{std::move(values)}, std::move(shape), DType::F32);
}

Tensor Builder::binary(Op op, Tensor a, Tensor c) { return add_node(op, {a.id, c.id}, NoAttrs{}); }
Tensor Builder::unary(Op op, Tensor a) { return add_node(op, {a.id}, NoAttrs{}); }
Tensor Builder::where(Tensor cond, Tensor a, Tensor c) {
  return add_node(Op::Where, {cond.id, a.id, c.id}, NoAttrs{});
}
Tensor Builder::matmul(Tensor a, Tensor w) { return add_node(Op::MatMul, {a.id, w.id}, NoAttrs{}); }
Tensor Builder::reshape(Tensor a, Shape shape) {
  return add_node(Op::Reshape, {a.id}, NoAttrs{}, std::move(shape));
}
Tensor Builder::permute(Tensor a, std::vector<int> perm) {
  return add_node(Op::Permute, {a.id}, PermuteAttrs{std::move(perm)});
}
Tensor Builder::slice(Tensor a, int axis, int64_t start, Dim length) {
  return add_node(Op::Slice, {a.id}, SliceAttrs{axis, start, length});
}
Tensor Builder::concat(Tensor a, Tensor c, int axis) {
  return add_node(Op::Concat, {a.id, c.id}, ConcatAttrs{axis});
}
Tensor Builder::gather(Tensor table, Tensor ids) {
  return add_node(Op::Gather, {table.id, ids.id}, NoAttrs{});
}
Tensor Builder::cast(Tensor a, DType dtype) { return add_node(Op::Cast, {a.id}, NoAttrs{}, {}, dtype); }
Tensor Builder::scatter_rows(Tensor st, Tensor rows, Tensor slots) {
  return add_node(Op::ScatterRows, {st.id, rows.id, slots.id}, NoAttrs{});
}

Tensor Builder::rms_norm(Tensor x, Tensor weight, float eps) {
  return add_node(Op::RmsNorm, {x.id, weight.id}, RmsNormAttrs{eps});
}
Tensor Builder::rope(Tensor x, Tensor positions, const RopeAttrs& attrs, std::optional<Tensor> freq_factors) {
  std::vector<NodeId> in{x.id, positions.id};
  if (freq_factors) in.push_back(freq_factors->id);
  return add_node(Op::Rope, std::move(in), attrs);
}
Tensor Builder::attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor q_pos, Tensor q_seq,
                          Tensor block_table, const AttentionAttrs& a, std::optional<Tensor> sinks) {
  std::vector<NodeId> in{q.id, k_cache.id, v_cache.id, q_pos.id, q_seq.id, block_table.id};
  if (sinks) in.push_back(sinks->id);
  return add_node(Op::Attention, std::move(in), a);
}
Tensor Builder::gather_blocks(Tensor cache, Tensor block_table, Tensor seq, const BlockGatherAttrs& a) {
  return add_node(Op::GatherBlocks, {cache.id, block_table.id, seq.id}, a);
}
Tensor Builder::delta_net(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, Tensor state, Tensor q_seq,
                          Tensor slots, const DeltaNetAttrs& a) {
  return add_node(Op::DeltaNet, {q.id, k.id, v.id, g.id, beta.id, state.id, q_seq.id, slots.id}, a);
}
Tensor Builder::delta_net_state(Tensor state, Tensor k, Tensor v, Tensor g, Tensor beta, Tensor q_seq,
                                Tensor slots, Tensor after, const DeltaNetAttrs& a) {
  return add_node(Op::DeltaNetState, {state.id, k.id, v.id, g.id, beta.id, q_seq.id, slots.id, after.id}, a);
}
Tensor Builder::kv_write(Tensor cache, Tensor rows, Tensor slots) {
  return add_node(Op::KvWrite, {cache.id, rows.id, slots.id}, NoAttrs{});
}
Tensor Builder::short_conv(Tensor cache, Tensor weight, Tensor q_pos, Tensor q_seq, Tensor block_table,
                           const BlockGatherAttrs& a) {
  return add_node(Op::ShortConv, {cache.id, weight.id, q_pos.id, q_seq.id, block_table.id}, a);
}
Tensor Builder::embedding(Tensor table, Tensor ids) {
  return add_node(Op::Embedding, {table.id, ids.id}, NoAttrs{});
}

Tensor Builder::moe(Tensor x, Tensor probs, Tensor gate_exps, Tensor up_exps, Tensor down_exps,
                    const MoeAttrs& a, std::optional<Tensor> expert_scale) {
  std::vector<NodeId> in{x.id, probs.id, gate_exps.id, up_exps.id, down_exps.id};
  if (expert_scale) in.push_back(expert_scale->id);
  return add_node(Op::Moe, std::move(in), a);
}
Tensor Builder::moe_biased(Tensor x, Tensor probs, Tensor gate_exps, Tensor up_exps, Tensor down_exps,
                           Tensor gate_bias, Tensor up_bias, Tensor down_bias, const MoeAttrs& a) {
  return add_node(
      Op::Moe,
      {x.id, probs.id, gate_exps.id, up_exps.id, down_exps.id, gate_bias.id, up_bias.id, down_bias.id}, a);
}
Tensor Builder::softcap(Tensor x, float cap) { return add_node(Op::Softcap, {x.id}, SoftcapAttrs{cap}); }

void Builder::output(const std::string& name, Tensor t) {
  if (error_) return;
  g_.outputs.push_back(Output{name, t.id});
}

void Builder::update_state(Tensor st, Tensor value) {
  if (error_) return;
  const Node& s = node(st.id);
  const Node& v = node(value.id);
  if (s.op != Op::State || !(s.shape == v.shape) || s.dtype != v.dtype) {
    fail(make_error(
        ErrorCode::InvalidArgument,
        fmt::format("graph: state update of '{}' needs a state and a value of the same shape and dtype",
                    s.name)));
    return;
  }
  g_.state_updates.push_back(StateUpdate{st.id, value.id});
}

Result<Graph> Builder::finish() {
  if (error_) return *error_;
  return std::move(g_);
}

}  // namespace glass::graph
