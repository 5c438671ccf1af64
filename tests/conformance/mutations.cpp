#include "mutations.h"

#include <string>
#include <vector>

#include "graph/rewrite.h"

namespace glass::conformance {
namespace {

using graph::Builder;
using graph::Dim;
using graph::Node;
using graph::Op;
using graph::Shape;
using graph::Tensor;

// Rewrites every node of kind `op` with `emit`, copying the rest.
GraphRewrite on_op(Op op, graph::NodeEmitter emit) {
  return [op, emit](const graph::Graph& g) {
    return graph::rewrite_nodes(g, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
      return n.op == op ? emit(b, n, in) : graph::copy_node(b, n, in);
    });
  };
}

// Lowers attention to primitives first, then rewrites its mask comparison (less_equal(kv_pos, q_pos)).
GraphRewrite on_attention_mask(graph::NodeEmitter emit) {
  return [emit](const graph::Graph& g) -> Result<graph::Graph> {
    graph::RewriteLog log;
    graph::Bindings max;  // the keys a step reads: at most glass's longest default context
    max[graph::Sym::S] = 131072;
    auto lowered = graph::decompose_composites(
        g, [](const Node& n) { return n.op == Op::Attention; }, log, max);
    if (!lowered) return lowered.error();
    return on_op(Op::LessEqual, emit)(*lowered);
  };
}

Tensor with_attrs(Builder& b, const Node& n, const std::vector<Tensor>& in, graph::Attrs attrs) {
  Node copy = n;
  copy.attrs = std::move(attrs);
  return graph::copy_node(b, copy, in);
}

}  // namespace

Mutation rope_pairs_swapped() {
  return {"rope pairs swapped (normal vs NeoX)",
          on_op(Op::Rope, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            auto r = std::get<graph::RopeAttrs>(n.attrs);
            r.mode = r.mode == graph::RopeMode::Normal ? graph::RopeMode::NeoX : graph::RopeMode::Normal;
            return with_attrs(b, n, in, r);
          })};
}

Mutation mask_polarity_flipped() {
  return {"causal mask polarity flipped",
          on_attention_mask([](Builder& b, const Node&, const std::vector<Tensor>& in) {
            return b.less_equal(in[1], in[0]);
          })};
}

Mutation frontier_one_too_many() {
  return {"cache frontier: one position too many",
          on_attention_mask([](Builder& b, const Node&, const std::vector<Tensor>& in) {
            return b.less_equal(in[0], in[1] + b.scalar(1.0f));
          })};
}

Mutation frontier_one_too_few() {
  return {"cache frontier: one position too few",
          on_attention_mask([](Builder& b, const Node&, const std::vector<Tensor>& in) {
            return b.less_equal(in[0], in[1] - b.scalar(1.0f));
          })};
}

Mutation gqa_heads_mapped_wrong() {
  return {"K/Q heads mapped wrong under GQA",
          on_op(Op::Attention, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            // Reorder q heads so that attention's h / group mapping reads kv head h % n_kv for each
            // original head h, then restore the output order.
            const Dim T = in[0].shape()[0];
            const int64_t H = in[0].shape()[1].value, D = in[0].shape()[2].value,
                          Hkv = in[1].shape()[1].value;
            const Dim g = Dim::constant(H / Hkv), kv = Dim::constant(Hkv), d = Dim::constant(D);
            const Shape heads{T, Dim::constant(H), d};
            std::vector<Tensor> moved = in;
            moved[0] = b.reshape(b.permute(b.reshape(in[0], Shape{T, g, kv, d}), {0, 2, 1, 3}), heads);
            const Tensor o = graph::copy_node(b, n, moved);
            return b.reshape(b.permute(b.reshape(o, Shape{T, kv, g, d}), {0, 2, 1, 3}), heads);
          })};
}

Mutation rms_norm_eps_ignored() {
  return {"RMSNorm epsilon ignored",
          on_op(Op::RmsNorm, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            return with_attrs(b, n, in, graph::RmsNormAttrs{0.0f});
          })};
}

Mutation qk_projections_transposed() {
  return {"Q and K projections transposed",
          on_op(Op::MatMul, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            const Node& w = b.node(in[1].id);
            const bool qk = w.op == Op::Parameter &&
                            (w.name.ends_with("attn_q.weight") || w.name.ends_with("attn_k.weight"));
            if (!qk || !(w.shape[0] == w.shape[1])) return graph::copy_node(b, n, in);
            return b.matmul(in[0], b.permute(in[1], {1, 0}));
          })};
}

namespace {

// Replaces every node of kind `op` whose name ends with one of `suffixes` by its input 0.
GraphRewrite bypass(Op op, std::vector<std::string> suffixes) {
  return on_op(op, [suffixes](Builder& b, const Node& n, const std::vector<Tensor>& in) {
    for (const std::string& s : suffixes)
      if (n.name.ends_with(s)) return in[0];
    return graph::copy_node(b, n, in);
  });
}

GraphRewrite on_moe(void (*change)(graph::MoeAttrs&, int64_t n_expert)) {
  return on_op(Op::Moe, [change](Builder& b, const Node& n, const std::vector<Tensor>& in) {
    auto m = std::get<graph::MoeAttrs>(n.attrs);
    change(m, in[2].shape()[0].value);
    return with_attrs(b, n, in, m);
  });
}

}  // namespace

Mutation qkv_bias_removed() {
  return {"QKV biases removed", bypass(Op::Add, {".q_bias", ".k_bias", ".v_bias"})};
}

Mutation rope_base_default() {
  return {"RoPE base 1e4 instead of the file's",
          on_op(Op::Rope, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            auto r = std::get<graph::RopeAttrs>(n.attrs);
            r.freq_base = 10000.0f;
            return with_attrs(b, n, in, r);
          })};
}

Mutation qk_norm_removed() { return {"q/k norm removed", bypass(Op::RmsNorm, {".q_norm", ".k_norm"})}; }

Mutation partial_rotary_ignored() {
  return {"partial rotary ignored (all head dims rotated)",
          on_op(Op::Rope, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            auto r = std::get<graph::RopeAttrs>(n.attrs);
            r.n_rot = static_cast<int>(in[0].shape()[2].value);
            return with_attrs(b, n, in, r);
          })};
}

Mutation fused_gate_up_swapped() {
  return {"fused gate/up halves swapped",
          on_op(Op::SwiGlu, [](Builder& b, const Node& n, const std::vector<Tensor>& in) {
            return graph::copy_node(b, n, {in[1], in[0]});
          })};
}

Mutation experts_top1() {
  return {"expert routing: top-1", on_moe([](graph::MoeAttrs& m, int64_t) { m.n_used = 1; })};
}

Mutation experts_all() {
  return {"expert routing: all experts (dense)",
          on_moe([](graph::MoeAttrs& m, int64_t n_expert) { m.n_used = static_cast<int>(n_expert); })};
}

Mutation experts_not_renormalised() {
  return {"expert routing: weights not renormalised",
          on_moe([](graph::MoeAttrs& m, int64_t) { m.normalize = false; })};
}

std::vector<Mutation> all_mutations() {
  return {rope_pairs_swapped(),       mask_polarity_flipped(),  frontier_one_too_many(),
          frontier_one_too_few(),     gqa_heads_mapped_wrong(), rms_norm_eps_ignored(),
          qk_projections_transposed()};
}

}  // namespace glass::conformance
