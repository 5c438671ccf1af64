#pragma once
// The GemmFn driver shared by the 16-row-group layouts (matmul_q4_0x16.h, matmul_q8_0x16.h,
// matmul_q4_kx16.h): w points at a group boundary; each full group goes through Group<RA> for RA
// activation rows at a time (then one at a time), and rows past the last full group are row-major
// (the matrix's tail) for the plain kernel Tail.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/matmul.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kGroupRows = 16;

// Group<R>(blocks, group, activations, a_stride, out, out_stride) computes 16 rows x R activations.
using Groups1Fn = void (*)(int64_t nb, const std::byte* const* g, const std::byte* a, float* const* out);

template <void (*GroupRA)(int64_t, const std::byte*, const std::byte*, size_t, float*, size_t),
          void (*Group1)(int64_t, const std::byte*, const std::byte*, size_t, float*, size_t), int RA,
          int64_t kBlock, GemmFn Tail, Groups1Fn Lockstep4 = nullptr>
void gemm_x16(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a,
              size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const int64_t nb = k / kBlock, groups = n_w / kGroupRows;
  int64_t g0 = 0;
  if constexpr (Lockstep4 != nullptr) {
    // One activation row (decode): four groups a quarter of the range apart, in lockstep, so each
    // thread keeps four far-apart memory streams in flight (one stream reads ~40 GB/s on 2 Zen 4
    // threads, four ~75).
    if (n_a == 1 && groups >= 4) {
      const int64_t q = groups / 4;
      for (int64_t j = 0; j < q; ++j) {
        const std::byte* gs[4];
        float* os[4];
        for (int i = 0; i < 4; ++i) {
          gs[i] = w + static_cast<size_t>((j + i * q) * kGroupRows) * w_stride;
          os[i] = out + (j + i * q) * kGroupRows;
        }
        Lockstep4(nb, gs, a, os);
      }
      g0 = 4 * q;
    }
  }
  for (int64_t g = g0; g < groups; ++g) {
    const std::byte* gw = w + static_cast<size_t>(g * kGroupRows) * w_stride;
    float* o = out + g * kGroupRows;
    int64_t i = 0;
    for (; i + RA <= n_a; i += RA)
      GroupRA(nb, gw, a + static_cast<size_t>(i) * a_stride, a_stride,
              o + static_cast<size_t>(i) * out_stride, out_stride);
    for (; i < n_a; ++i)
      Group1(nb, gw, a + static_cast<size_t>(i) * a_stride, a_stride, o + static_cast<size_t>(i) * out_stride,
             out_stride);
  }
  if (const int64_t done = groups * kGroupRows; done < n_w)
    Tail(k, w + static_cast<size_t>(done) * w_stride, w_stride, n_w - done, a, a_stride, n_a, out + done,
         out_stride);
}

// The repack walk shared by the layouts: for each full 16-row group and each block, place(blk, r,
// in) writes row r's block `in` into the group's block `blk` (16 blocks' bytes); the rows past the
// last full group are copied as they are.
template <class Block, int64_t kBlock, class Place>
void repack_groups(const std::byte* src, std::byte* dst, int64_t rows, int64_t k, const Place& place) {
  const int64_t nb = k / kBlock;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(Block);
  const int64_t groups = rows / kGroupRows;
  for (int64_t g = 0; g < groups; ++g) {
    const std::byte* s = src + static_cast<size_t>(g * kGroupRows) * row_bytes;
    std::byte* d = dst + static_cast<size_t>(g * kGroupRows) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      std::byte* blk = d + static_cast<size_t>(b) * kGroupRows * sizeof(Block);
      for (int64_t r = 0; r < kGroupRows; ++r)
        place(blk, r, reinterpret_cast<const Block*>(s + static_cast<size_t>(r) * row_bytes)[b]);
    }
  }
  const size_t done = static_cast<size_t>(groups * kGroupRows) * row_bytes;
  std::memcpy(dst + done, src + done, static_cast<size_t>(rows) * row_bytes - done);
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
