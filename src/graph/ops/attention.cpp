// Attention over a KV cache (Vaswani et al. 2017), grouped-query (Ainslie et al. 2023):
//   q [T, H, D], k/v cache [C, Hkv, D], q_pos [T], kv_pos [C] [, q_seq [T], kv_seq [C]] -> out [T, H, D]
// reads cache rows [0, kv_len); query t attends to row s iff kv_pos[s] <= q_pos[t] (causal by
// position, so a short query block sees the whole cached prefix) and, when sequence ids are given,
// kv_seq[s] == q_seq[t] (several sequences share one cache and one step); query head h uses kv head
// h / (H / Hkv). out = softmax(softcap(scale * q k^T) + mask) v.
// Sliding window (attrs.window = W > 0, local layers of Gemma / Mistral): row s is also hidden when
// q_pos[t] - kv_pos[s] >= W, so a query sees at most the W latest positions. The window is a mask
// on positions, so the result does not depend on how the cache stores rows (a full-size cache, as
// here, or a ring of W rows). Softcap (attrs.softcap = c > 0, Gemma 2): scores pass through
// c * tanh(s / c) (the softcap op's formula, decompose_softcap) before the mask.
// kv_write(cache [C, ...], rows [T, ...], slots [T]) stores row t at cache row slots[t].
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_attention(const InferArgs& a) {
  if (a.node.op == Op::KvWrite) return infer_row_write(a, true);
  if (a.inputs.size() != 5 && a.inputs.size() != 7)
    return node_error(a, "expects (q, k_cache, v_cache, q_pos, kv_pos[, q_seq, kv_seq])");
  const Node& q = *a.inputs[0];
  const Node& k = *a.inputs[1];
  const Node& v = *a.inputs[2];
  const Node& qp = *a.inputs[3];
  const Node& kp = *a.inputs[4];
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
  if (kp.dtype != DType::I32 || kp.shape.size() != 1 || !(kp.shape[0] == k.shape[0]))
    return node_error(a, "kv_pos must be i32 [C]");
  if (a.inputs.size() == 7) {
    const Node& qs = *a.inputs[5];
    const Node& ks = *a.inputs[6];
    if (qs.dtype != DType::I32 || !(qs.shape == qp.shape)) return node_error(a, "q_seq must be i32 [T]");
    if (ks.dtype != DType::I32 || !(ks.shape == kp.shape)) return node_error(a, "kv_seq must be i32 [C]");
  }
  const auto& attrs = std::get<AttentionAttrs>(a.node.attrs);
  if (attrs.window < 0) return node_error(a, "window must be >= 0 (0: no window)");
  if (!(attrs.softcap >= 0.0f)) return node_error(a, "softcap must be >= 0 (0: none)");
  if (!attrs.kv_len.is_symbolic() && !k.shape[0].is_symbolic() && attrs.kv_len.value > k.shape[0].value)
    return node_error(a, "kv_len exceeds the cache");
  return TypeInfo{q.shape, DType::F32};
}

Tensor decompose_attention(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const auto& attrs = std::get<AttentionAttrs>(n.attrs);
  const Tensor q = in[0];
  const Dim T = q.shape()[0];
  const int64_t n_heads = q.shape()[1].value;
  const int64_t head_dim = q.shape()[2].value;
  const int64_t n_kv = in[1].shape()[1].value;
  const int64_t group = n_heads / n_kv;
  const Dim S = attrs.kv_len;
  const Dim one = Dim::constant(1);

  auto rows = [&](Tensor cache) { return b.cast(b.slice(cache, 0, 0, S), DType::F32); };
  // [Hkv, 1, S, D]: one K block per kv head, broadcast over the query heads of its group.
  const Tensor k = b.reshape(b.permute(rows(in[1]), {1, 0, 2}),
                             Shape{Dim::constant(n_kv), one, S, Dim::constant(head_dim)});
  const Tensor v_t = b.reshape(b.permute(rows(in[2]), {1, 2, 0}),
                               Shape{Dim::constant(n_kv), one, Dim::constant(head_dim), S});
  // [Hkv, group, T, D]
  const Tensor qg =
      b.permute(b.reshape(q, Shape{T, Dim::constant(n_kv), Dim::constant(group), Dim::constant(head_dim)}),
                {1, 2, 0, 3});
  Tensor scores = b.matmul(qg, k) * b.scalar(attrs.scale);  // [Hkv, group, T, S]
  if (attrs.softcap > 0.0f) scores = decompose_softcap(b, scores, attrs.softcap);

  const Tensor q_pos = b.reshape(b.cast(in[3], DType::F32), Shape{T, one});
  const Tensor kv_pos = b.reshape(b.cast(b.slice(in[4], 0, 0, S), DType::F32), Shape{one, S});
  Tensor visible = b.less_equal(kv_pos, q_pos).named(n.name + ".causal");  // [T, S]
  if (in.size() == 7) {
    const Tensor q_seq = b.reshape(b.cast(in[5], DType::F32), Shape{T, one});
    const Tensor kv_seq = b.reshape(b.cast(b.slice(in[6], 0, 0, S), DType::F32), Shape{one, S});
    visible = visible * b.less_equal(kv_seq, q_seq) * b.less_equal(q_seq, kv_seq);  // same sequence
  }
  if (attrs.window > 0)  // q_pos - kv_pos <= W - 1
    visible = visible * b.less_equal(q_pos - kv_pos, b.scalar(static_cast<float>(attrs.window - 1)))
                            .named(n.name + ".window");
  const Tensor masked = b.where(visible, scores, b.scalar(-1e30f));

  const Tensor e = b.exp(masked - b.reduce_max(masked));
  const Tensor p = e / b.reduce_sum(e);
  const Tensor out = b.matmul(p, v_t);  // [Hkv, group, T, D]
  return b.reshape(b.permute(out, {2, 0, 1, 3}), Shape{T, Dim::constant(n_heads), Dim::constant(head_dim)});
}

Tensor decompose_kv_write(Builder& b, const Node& /*n*/, const std::vector<Tensor>& in) {
  const Tensor rows = in[1].dtype() == in[0].dtype() ? in[1] : b.cast(in[1], in[0].dtype());
  return b.scatter_rows(in[0], rows, in[2]);
}

}  // namespace glass::graph
