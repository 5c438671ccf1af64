// Short causal convolution over a paged cache (LFM2's gated short-conv blocks; the conv1d before
// Mamba's and Gated DeltaNet's recurrences is the same op): each channel of a token's output is a
// dot product of the channel's L taps with that channel's values at the token's last L positions of
// its own sequence, read through the sequence's block table as attention reads keys:
//   short_conv(cache [C, D], weight [D, L], q_pos [T], q_seq [T], block_table [N, M]) -> [T, D]
//   out[t, d] = sum_{k=0..L-1} weight[d, k] * row(q_seq[t], q_pos[t] - (L-1) + k)[d]
// where a position below 0 reads zeros (a sequence starts from an empty state) and the sum runs in
// k order. The cache holds the step's own rows (kv_write before the op), so a sequence's state
// between steps is its last L - 1 rows: a sliding-window pool of window L keeps exactly those.
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_short_conv(const InferArgs& a) {
  if (a.inputs.size() != 5) return node_error(a, "expects (cache, weight, q_pos, q_seq, block_table)");
  const Node& cache = *a.inputs[0];
  const Node& w = *a.inputs[1];
  const Node& qp = *a.inputs[2];
  const Node& qs = *a.inputs[3];
  const Node& table = *a.inputs[4];
  const auto& attrs = std::get<BlockGatherAttrs>(a.node.attrs);
  if (cache.dtype != DType::F32 || cache.shape.size() != 2 || cache.shape[1].is_symbolic())
    return node_error(a, "cache must be f32 [C, D]");
  if (w.dtype != DType::F32 || w.shape.size() != 2 || !(w.shape[0] == cache.shape[1]) ||
      w.shape[1].is_symbolic() || w.shape[1].value < 1)
    return node_error(a, fmt::format("weight must be f32 [{}, L], got {}", dim_to_string(cache.shape[1]),
                                     shape_to_string(w.shape)));
  if (qp.dtype != DType::I32 || qp.shape.size() != 1) return node_error(a, "q_pos must be i32 [T]");
  if (qs.dtype != DType::I32 || !(qs.shape == qp.shape)) return node_error(a, "q_seq must be i32 [T]");
  if (table.dtype != DType::I32 || table.shape.size() != 2)
    return node_error(a, "block_table must be i32 [N, max_blocks]");
  if (attrs.block_size <= 0) return node_error(a, "block_size must be positive");
  if (!cache.shape[0].is_symbolic() && cache.shape[0].value % attrs.block_size != 0)
    return node_error(a, fmt::format("cache rows {} not a multiple of block_size {}", cache.shape[0].value,
                                     attrs.block_size));
  return TypeInfo{Shape{qp.shape[0], cache.shape[1]}, DType::F32};
}

Tensor decompose_short_conv(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max) {
  const auto& attrs = std::get<BlockGatherAttrs>(n.attrs);
  const Dim T = in[2].shape()[0], D = in[0].shape()[1], S = attrs.len, one = Dim::constant(1);
  const int64_t L = in[1].shape()[1].value;
  // [T, D, S]: each token's own sequence's rows at positions [0, S), channels first.
  const Tensor rows = b.permute(b.gather_blocks(in[0], in[4], in[3], attrs), {0, 2, 1});
  const auto positions = sequence_positions(b, n, "short_conv", in[4].shape()[1], attrs.block_size, S, max);
  if (!positions) return in[0];
  const Tensor pos = b.reshape(*positions, Shape{one, one, S});
  const Tensor q_pos = b.reshape(b.cast(in[2], DType::F32), Shape{T, one, one});
  std::optional<Tensor> acc;
  for (int64_t k = 0; k < L; ++k) {
    // Tap k reads position q_pos - (L-1) + k: a one-hot row over [0, S), all zero below position 0.
    const Tensor at = q_pos - b.scalar(static_cast<float>(L - 1 - k));
    const Tensor hit = b.less_equal(pos, at) * b.less_equal(at, pos);  // [T, 1, S]
    const Tensor tap = b.reshape(b.reduce_sum(b.where(hit, rows, b.scalar(0.0f))), Shape{T, D});
    const Tensor term = tap * b.reshape(b.slice(in[1], 1, k, one), Shape{D});
    acc = acc ? *acc + term : term;
  }
  return *acc;
}

}  // namespace glass::graph
