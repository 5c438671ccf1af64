// Attention over a paged KV cache (Vaswani et al. 2017), grouped-query (Ainslie et al. 2023):
//   q [T, H, D], k/v cache [C, Hkv, D], q_pos [T], q_seq [T], block_table [N, max_blocks] -> out [T, H, D]
// The cache is a pool of blocks of attrs.block_size rows shared by every sequence; a sequence's keys
// at positions 0, 1, ... lie at the rows its row of the block table names: position j at row
// block_table[seq, j / block_size] * block_size + j % block_size. Query t of sequence q_seq[t] sees
// its own sequence's positions 0 .. q_pos[t] (causal), so rows of other sequences are never read
// and a query's cost grows with its own sequence's length only; query head h uses kv head
// h / (H / Hkv). out = softmax(softcap(scale * q k^T) + mask) v. kv_len (S) is the most keys any
// query of the step reads (bounds scratch; every query reads its own q_pos[t] + 1).
// Sliding window (attrs.window = W > 0, local layers of Gemma / Mistral): position j is also hidden
// when q_pos[t] - j >= W. Softcap (attrs.softcap = c > 0, Gemma 2): scores pass through
// c * tanh(s / c) (the softcap op's formula, decompose_softcap) before the mask.
// Sinks (a seventh input [H], gpt-oss): head h's softmax also holds the logit sinks[h] (not scaled),
// which adds to the normaliser and to no value: out = sum_j e^(s_j - m) v_j / (sum_j e^(s_j - m) +
// e^(sinks[h] - m)), m the larger of the scores' maximum and sinks[h].
// Where the blocks lie never changes the result: contiguous, fragmented or shared give the same.
// kv_write(cache [C, ...], rows [T, ...], slots [T]) stores row t at cache row slots[t].
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_attention(const InferArgs& a) {
  if (a.node.op == Op::KvWrite) return infer_row_write(a, true);
  if (a.inputs.size() != 6 && a.inputs.size() != 7)
    return node_error(a, "expects (q, k_cache, v_cache, q_pos, q_seq, block_table[, sinks])");
  const Node& q = *a.inputs[0];
  const Node& k = *a.inputs[1];
  const Node& v = *a.inputs[2];
  const Node& qp = *a.inputs[3];
  const Node& qs = *a.inputs[4];
  const Node& table = *a.inputs[5];
  if (q.dtype != DType::F32 || q.shape.size() != 3) return node_error(a, "q must be f32 [T, H, D]");
  if (k.shape.size() != 3 || !(k.shape == v.shape) || k.dtype != v.dtype ||
      (k.dtype != DType::F32 && k.dtype != DType::F16))
    return node_error(a, fmt::format("k and v caches must be f32 or f16 [C, Hkv, D] alike, got {} and {}",
                                     shape_to_string(k.shape), shape_to_string(v.shape)));
  if (!(k.shape[2] == q.shape[2])) return node_error(a, "q and cache head_dim differ");
  const Dim& H = q.shape[1];
  const Dim& Hkv = k.shape[1];
  if (H.is_symbolic() || Hkv.is_symbolic() || H.value % Hkv.value != 0)
    return node_error(
        a, fmt::format("{} query heads not a multiple of {} kv heads", dim_to_string(H), dim_to_string(Hkv)));
  if (qp.dtype != DType::I32 || qp.shape.size() != 1 || !(qp.shape[0] == q.shape[0]))
    return node_error(a, "q_pos must be i32 [T]");
  if (qs.dtype != DType::I32 || !(qs.shape == qp.shape)) return node_error(a, "q_seq must be i32 [T]");
  if (table.dtype != DType::I32 || table.shape.size() != 2)
    return node_error(a, "block_table must be i32 [N, max_blocks]");
  if (a.inputs.size() == 7 && (a.inputs[6]->dtype != DType::F32 || !(a.inputs[6]->shape == Shape{H})))
    return node_error(a, fmt::format("sinks must be f32 [{}], got {}", dim_to_string(H),
                                     shape_to_string(a.inputs[6]->shape)));
  const auto& attrs = std::get<AttentionAttrs>(a.node.attrs);
  if (attrs.window < 0) return node_error(a, "window must be >= 0 (0: no window)");
  if (!(attrs.softcap >= 0.0f)) return node_error(a, "softcap must be >= 0 (0: none)");
  if (attrs.block_size <= 0) return node_error(a, "block_size must be positive");
  if (!k.shape[0].is_symbolic() && k.shape[0].value % attrs.block_size != 0)
    return node_error(
        a, fmt::format("cache rows {} not a multiple of block_size {}", k.shape[0].value, attrs.block_size));
  if (!attrs.kv_len.is_symbolic() && !table.shape[1].is_symbolic() &&
      attrs.kv_len.value > table.shape[1].value * attrs.block_size)
    return node_error(a, "kv_len exceeds what a block table row holds");
  return TypeInfo{q.shape, DType::F32};
}

Tensor decompose_attention(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max) {
  const auto& attrs = std::get<AttentionAttrs>(n.attrs);
  const Tensor q = in[0];
  const Dim T = q.shape()[0];
  const int64_t n_heads = q.shape()[1].value;
  const int64_t head_dim = q.shape()[2].value;
  const int64_t n_kv = in[1].shape()[1].value;
  const int64_t group = n_heads / n_kv;
  const Dim S = attrs.kv_len;
  const Dim one = Dim::constant(1), Hkv = Dim::constant(n_kv), D = Dim::constant(head_dim);

  // [T, S, Hkv, D]: each token's own sequence's rows at positions [0, S).
  auto rows = [&](Tensor cache) {
    return b.cast(b.gather_blocks(cache, in[5], in[4], BlockGatherAttrs{attrs.block_size, S}), DType::F32);
  };
  const Tensor k = b.permute(rows(in[1]), {0, 2, 1, 3});                   // [T, Hkv, S, D]
  const Tensor v_t = b.permute(rows(in[2]), {0, 2, 3, 1});                 // [T, Hkv, D, S]
  const Tensor qg = b.reshape(q, Shape{T, Hkv, Dim::constant(group), D});  // [T, Hkv, group, D]
  Tensor scores = b.matmul(qg, k) * b.scalar(attrs.scale);                 // [T, Hkv, group, S]
  if (attrs.softcap > 0.0f) scores = decompose_softcap(b, scores, attrs.softcap);

  // The key positions 0 .. S-1 as a row (a sequence's position j is its j-th key).
  const auto positions = sequence_positions(b, n, "attention", in[5].shape()[1], attrs.block_size, S, max);
  if (!positions) return q;
  const Tensor kv_pos = b.reshape(*positions, Shape{one, S});
  const Tensor q_pos = b.reshape(b.cast(in[3], DType::F32), Shape{T, one});
  Tensor visible = b.less_equal(kv_pos, q_pos).named(n.name + ".causal");  // [T, S]
  if (attrs.window > 0)                                                    // q_pos - kv_pos <= W - 1
    visible = visible * b.less_equal(q_pos - kv_pos, b.scalar(static_cast<float>(attrs.window - 1)))
                            .named(n.name + ".window");
  const Tensor masked = b.where(b.reshape(visible, Shape{T, one, one, S}), scores, b.scalar(-1e30f));

  if (in.size() == 7) {  // the sink joins the max and the normaliser: [1, Hkv, group, 1]
    const Tensor sink = b.reshape(in[6], Shape{one, Hkv, Dim::constant(group), one});
    const Tensor rmax = b.reduce_max(masked);
    const Tensor m = b.where(b.less_equal(rmax, sink), sink, rmax);
    const Tensor e = b.exp(masked - m);
    const Tensor p = e / (b.reduce_sum(e) + b.exp(sink - m));
    return b.reshape(b.matmul(p, v_t), Shape{T, Dim::constant(n_heads), D});
  }
  const Tensor e = b.exp(masked - b.reduce_max(masked));
  const Tensor p = e / b.reduce_sum(e);
  const Tensor out = b.matmul(p, v_t);  // [T, Hkv, group, D]
  return b.reshape(out, Shape{T, Dim::constant(n_heads), D});
}

std::optional<Tensor> sequence_positions(Builder& b, const Node& n, std::string_view what,
                                         const Dim& table_width, int64_t block_size, const Dim& S,
                                         const Bindings& max) {
  const int64_t bound = table_width.is_symbolic() ? resolve(S, max) : table_width.value * block_size;
  if (bound <= 0) {
    b.fail(make_error(
        ErrorCode::InvalidArgument,
        fmt::format("{} '{}': its decomposition needs a bound on the positions a step reads ({} has "
                    "none)",
                    what, n.name, dim_to_string(S))));
    return std::nullopt;
  }
  std::vector<float> iota(static_cast<size_t>(bound));
  for (size_t j = 0; j < iota.size(); ++j) iota[j] = static_cast<float>(j);
  return b.slice(b.constant(std::move(iota), Shape{Dim::constant(bound)}), 0, 0, S);
}

Tensor decompose_kv_write(Builder& b, const Node& /*n*/, const std::vector<Tensor>& in) {
  const Tensor rows = in[1].dtype() == in[0].dtype() ? in[1] : b.cast(in[1], in[0].dtype());
  return b.scatter_rows(in[0], rows, in[2]);
}

}  // namespace glass::graph
