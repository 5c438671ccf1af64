// out[..., m, n] = sum_k a[..., m, k] * w[..., n, k], accumulated in double. Weight rows of any
// storage dtype are expanded to f32 one row at a time into scratch (never the whole tensor).
#include "backend/ref/kernel.h"

namespace glass::backend::ref {

Status matmul(const KernelArgs& a) {
  const TensorRef& x = a.in[0];
  const TensorRef& w = a.in[1];
  const int64_t K = x.dim(x.ext.rank - 1);
  const int64_t M = x.dim(x.ext.rank - 2);
  const int64_t N = w.dim(w.ext.rank - 2);
  // Batch: output batch dims (rank - 2 of them) broadcast against each operand's batch dims.
  const int nb = a.out.ext.rank - 2;
  std::array<int64_t, 2> ob{1, 1}, xb{1, 1}, wb{1, 1};
  for (int i = 0; i < nb; ++i) ob[static_cast<size_t>(2 - nb + i)] = a.out.dim(i);
  for (int i = 0; i < x.ext.rank - 2; ++i) xb[static_cast<size_t>(2 - (x.ext.rank - 2) + i)] = x.dim(i);
  for (int i = 0; i < w.ext.rank - 2; ++i) wb[static_cast<size_t>(2 - (w.ext.rank - 2) + i)] = w.dim(i);
  const auto row_bytes = static_cast<int64_t>(*graph::dtype_bytes(w.dtype, static_cast<uint64_t>(K)));
  float* wrow = a.scratch;
  for (int64_t b0 = 0; b0 < ob[0]; ++b0) {
    for (int64_t b1 = 0; b1 < ob[1]; ++b1) {
      const int64_t xbi = (xb[0] == 1 ? 0 : b0) * xb[1] + (xb[1] == 1 ? 0 : b1);
      const int64_t wbi = (wb[0] == 1 ? 0 : b0) * wb[1] + (wb[1] == 1 ? 0 : b1);
      const float* xm = x.f32() + xbi * M * K;
      float* om = a.out.f32() + (b0 * ob[1] + b1) * M * N;
      for (int64_t n = 0; n < N; ++n) {
        TensorRef row_src{static_cast<std::byte*>(w.data) + (wbi * N + n) * row_bytes, {}, w.dtype};
        row_src.ext.rank = 1;
        row_src.ext.dims[0] = K;
        if (auto st = load_row_f32(row_src, 0, wrow); !st) return st;
        for (int64_t m = 0; m < M; ++m) {
          const float* xr = xm + m * K;
          double acc = 0.0;
          for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(xr[k]) * wrow[k];
          om[m * N + n] = static_cast<float>(acc);
        }
      }
    }
  }
  return {};
}

}  // namespace glass::backend::ref
