// short_conv (graph/ops/conv.cpp) as the definition reads: per token, per channel, the L taps in
// order over the token's sequence's rows through its block table; positions below 0 read zeros.
#include <fmt/format.h>

#include "backend/ref/kernel.h"

namespace glass::backend::ref {

Status short_conv(const KernelArgs& a) {
  const auto& attrs = std::get<graph::BlockGatherAttrs>(a.node.attrs);
  const TensorRef& cache = a.in[0];
  const TensorRef& w = a.in[1];
  const TensorRef& table = a.in[4];
  const int64_t C = cache.dim(0), D = cache.dim(1), L = w.dim(1), T = a.in[2].dim(0);
  const int64_t N = table.dim(0), MB = table.dim(1), B = attrs.block_size;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t pos = a.in[2].i32()[t], seq = a.in[3].i32()[t];
    if (seq < 0 || seq >= N || pos < 0 || pos >= MB * B)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("ref: short_conv '{}': token {} at position {} of sequence {} outside the "
                      "step's {} sequences of at most {} positions",
                      a.node.name, t, pos, seq, N, MB * B));
    float* out = a.out.f32() + t * D;
    std::fill(out, out + D, 0.0f);
    for (int64_t k = 0; k < L; ++k) {
      const int64_t j = pos - (L - 1) + k;
      if (j < 0) continue;
      const int32_t block = table.i32()[seq * MB + j / B];
      if (block < 0 || (block + 1) * B > C)
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("ref: short_conv '{}': sequence {} position {} in block {} outside the "
                                      "cache's {} blocks",
                                      a.node.name, seq, j, block, C / B));
      const float* row = cache.f32() + (block * B + j % B) * D;
      for (int64_t d = 0; d < D; ++d) out[d] += w.f32()[d * L + k] * row[d];
    }
  }
  return {};
}

}  // namespace glass::backend::ref
