// short_conv (graph/ops/conv.cpp) on the cpu backend: tokens split over the threads, each token's
// L taps summed in order per channel (the reference's order, so the two agree bit for bit where the
// compiler does not contract the multiply-add). Its cost is T * D * L multiply-adds, a rounding
// error beside the in/out projections around it.
#include <fmt/format.h>

#include "backend/cpu/kernels/kernels.h"

namespace glass::backend::cpu::kernels {

Status short_conv(const KernelArgs& a) {
  const auto& attrs = std::get<graph::BlockGatherAttrs>(a.node.attrs);
  const TensorView& cache = a.in[0];
  const TensorView& table = a.in[4];
  const float* w = a.in[1].f32();
  const int64_t C = cache.dim(0), D = cache.dim(1), L = a.in[1].dim(1), T = a.in[2].dim(0);
  const int64_t N = table.dim(0), MB = table.dim(1), B = attrs.block_size;
  const int32_t* pos = a.in[2].i32();
  const int32_t* seq = a.in[3].i32();
  // Every row a token reads is checked before any runs: a bad step input is an error, not a read
  // outside the cache.
  for (int64_t t = 0; t < T; ++t) {
    if (seq[t] < 0 || seq[t] >= N || pos[t] < 0 || pos[t] >= MB * B)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("short_conv '{}': token {} at position {} of sequence {} outside the step's "
                      "{} sequences of at most {} positions",
                      a.node.name, t, pos[t], seq[t], N, MB * B));
    for (int64_t j = std::max<int64_t>(0, pos[t] - (L - 1)); j <= pos[t]; ++j) {
      const int32_t block = table.i32()[seq[t] * MB + j / B];
      if (block < 0 || (block + 1) * B > C)
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("short_conv '{}': sequence {} position {} in block {} outside the "
                                      "cache's {} blocks",
                                      a.node.name, seq[t], j, block, C / B));
    }
  }
  parallel_for(a.pool, T, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, D * L)),
               [&](int64_t t0, int64_t t1, int) {
                 for (int64_t t = t0; t < t1; ++t) {
                   float* out = a.out.f32() + t * D;
                   std::fill(out, out + D, 0.0f);
                   for (int64_t k = 0; k < L; ++k) {
                     const int64_t j = pos[t] - (L - 1) + k;
                     if (j < 0) continue;
                     const float* row = cache.f32() + (table.i32()[seq[t] * MB + j / B] * B + j % B) * D;
                     const float* wk = w + k;
                     for (int64_t d = 0; d < D; ++d) out[d] += wk[d * L] * row[d];
                   }
                 }
               });
  return {};
}

}  // namespace glass::backend::cpu::kernels
