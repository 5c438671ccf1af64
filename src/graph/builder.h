#pragma once
// The builder API models are written against. Each call validates its operands and infers the
// output shape and dtype at once; the first error is kept (naming the node and op) and returned by
// finish(), so a model reads as a page of calls without error plumbing on every line.
#include <optional>
#include <string>
#include <vector>

#include "glass/result.h"
#include "graph/graph.h"

namespace glass::graph {

class Builder;

// A handle to a node being built. Arithmetic operators build elementwise nodes.
struct Tensor {
  Builder* b = nullptr;
  NodeId id = -1;

  const Shape& shape() const;
  DType dtype() const;
  Tensor named(const std::string& name) const;
};

Tensor operator+(Tensor a, Tensor c);
Tensor operator-(Tensor a, Tensor c);
Tensor operator*(Tensor a, Tensor c);
Tensor operator/(Tensor a, Tensor c);

class Builder {
 public:
  // leaves
  Tensor input(const std::string& name, Shape shape, DType dtype);
  Tensor parameter(const std::string& name, Shape shape, DType dtype);
  Tensor state(const std::string& name, Shape shape, DType dtype);
  Tensor constant(std::vector<float> values, Shape shape);
  Tensor scalar(float v) { return constant({v}, make_shape({1})); }

  // primitives
  Tensor add(Tensor a, Tensor c) { return binary(Op::Add, a, c); }
  Tensor sub(Tensor a, Tensor c) { return binary(Op::Sub, a, c); }
  Tensor mul(Tensor a, Tensor c) { return binary(Op::Mul, a, c); }
  Tensor div(Tensor a, Tensor c) { return binary(Op::Div, a, c); }
  Tensor less_equal(Tensor a, Tensor c) { return binary(Op::LessEqual, a, c); }
  Tensor where(Tensor cond, Tensor a, Tensor c);
  Tensor neg(Tensor a) { return unary(Op::Neg, a); }
  Tensor exp(Tensor a) { return unary(Op::Exp, a); }
  Tensor sqrt(Tensor a) { return unary(Op::Sqrt, a); }
  Tensor recip(Tensor a) { return unary(Op::Recip, a); }
  Tensor sin(Tensor a) { return unary(Op::Sin, a); }
  Tensor cos(Tensor a) { return unary(Op::Cos, a); }
  Tensor tanh(Tensor a) { return unary(Op::Tanh, a); }
  Tensor log1p(Tensor a) { return unary(Op::Log1p, a); }
  Tensor reduce_sum(Tensor a) { return unary(Op::ReduceSum, a); }
  Tensor reduce_max(Tensor a) { return unary(Op::ReduceMax, a); }
  Tensor matmul(Tensor a, Tensor w);
  Tensor reshape(Tensor a, Shape shape);
  Tensor permute(Tensor a, std::vector<int> perm);
  Tensor slice(Tensor a, int axis, int64_t start, Dim length);
  Tensor concat(Tensor a, Tensor c, int axis);
  Tensor gather(Tensor table, Tensor ids);
  Tensor cast(Tensor a, DType dtype);
  Tensor scatter_rows(Tensor state, Tensor rows, Tensor slots);
  Tensor gather_blocks(Tensor cache, Tensor block_table, Tensor seq, const BlockGatherAttrs& a);
  // The gated delta rule over each token's sequence's state (graph/ops/delta_net.cpp): the outputs
  // [T, Hv, D], and the state pool [R, Hv, D, D] after the step (`after`: the outputs, read first).
  Tensor delta_net(Tensor q, Tensor k, Tensor v, Tensor g, Tensor beta, Tensor state, Tensor q_seq,
                   Tensor slots, const DeltaNetAttrs& a = {});
  Tensor delta_net_state(Tensor state, Tensor k, Tensor v, Tensor g, Tensor beta, Tensor q_seq, Tensor slots,
                         Tensor after, const DeltaNetAttrs& a = {});

  // composites
  Tensor rms_norm(Tensor x, Tensor weight, float eps);
  Tensor rope(Tensor x, Tensor positions, const RopeAttrs& attrs, std::optional<Tensor> freq_factors = {});
  // Query t (at position q_pos[t] of sequence q_seq[t]) reads that sequence's keys through row
  // q_seq[t] of block_table [N, max_blocks] (graph/ops/attention.cpp).
  // sinks [H]: a per-head logit in every row's softmax that adds to the normaliser and to no value
  // (gpt-oss's attention sinks).
  Tensor attention(Tensor q, Tensor k_cache, Tensor v_cache, Tensor q_pos, Tensor q_seq, Tensor block_table,
                   const AttentionAttrs& a, std::optional<Tensor> sinks = {});
  Tensor kv_write(Tensor cache, Tensor rows, Tensor slots);
  // Token t's output channel d: sum over k < L of weight[d, k] times channel d at position
  // q_pos[t] - (L-1) + k of its sequence, read through block_table (graph/ops/conv.cpp).
  Tensor short_conv(Tensor cache, Tensor weight, Tensor q_pos, Tensor q_seq, Tensor block_table,
                    const BlockGatherAttrs& a);
  Tensor silu(Tensor x) { return unary(Op::Silu, x); }
  Tensor swiglu(Tensor gate, Tensor up) { return binary(Op::SwiGlu, gate, up); }
  Tensor embedding(Tensor table, Tensor ids);
  // Mixture of experts (graph/ops/moe.cpp): x [T, dim], router probabilities [T, n_expert], experts
  // gate/up [n_expert, ffn, dim] and down [n_expert, dim, ffn] -> [T, dim]; expert_scale [n_expert]
  // multiplies each expert's output (Gemma 4's per-expert scale).
  Tensor moe(Tensor x, Tensor probs, Tensor gate_exps, Tensor up_exps, Tensor down_exps, const MoeAttrs& a,
             std::optional<Tensor> expert_scale = {});
  // The same with each expert's biases (gpt-oss): gate/up [n_expert, ffn], down [n_expert, dim].
  Tensor moe_biased(Tensor x, Tensor probs, Tensor gate_exps, Tensor up_exps, Tensor down_exps,
                    Tensor gate_bias, Tensor up_bias, Tensor down_bias, const MoeAttrs& a);
  Tensor gelu(Tensor x) { return unary(Op::Gelu, x); }
  Tensor geglu(Tensor gate, Tensor up) { return binary(Op::GeGlu, gate, up); }
  Tensor softcap(Tensor x, float cap);

  // graph interface
  void output(const std::string& name, Tensor t);
  void update_state(Tensor state, Tensor value);

  // Adds a node of any op (used by rewrites and deserialization); validates like the calls above.
  Tensor add_node(Op op, std::vector<NodeId> inputs, Attrs attrs, Shape declared_shape = {},
                  DType declared_dtype = DType::F32, std::string name = {});

  const Node& node(NodeId id) const { return g_.nodes.at(static_cast<size_t>(id)); }
  Node& mutable_node(NodeId id) { return g_.nodes.at(static_cast<size_t>(id)); }
  bool ok() const { return !error_.has_value(); }
  // Records an error found while building (e.g. a missing weight); the first one wins.
  void fail(Error e);
  Result<Graph> finish();

 private:
  Tensor binary(Op op, Tensor a, Tensor c);
  Tensor unary(Op op, Tensor a);

  Graph g_;
  std::optional<Error> error_;
};

}  // namespace glass::graph
