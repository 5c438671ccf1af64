#pragma once
// The GemmFn driver shared by the 16-row-group layouts (matmul_q4_0x16.h, matmul_q8_0x16.h,
// matmul_q4_kx16.h): w points at a group boundary; full groups go through the layout's kernels,
// and rows past the last full group are row-major (the matrix's tail) for the plain kernel Tail.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kGroupRows = 16;

// How far apart a decode walk's four lockstep streams may start: groups per window, each walked as
// four streams a quarter of it apart. With AVX-512 the whole range (a decode task, one per thread:
// the further apart the better); the AVX2 kernels, slower per byte, read faster with streams 4
// groups apart: glass bench tg, 1B Q4_0, 2 threads, alternating, 16-group windows 47.8 / 47.7 /
// 47.9 t/s against 44.6 / 45.3 / 45.4 for the whole range (and 47.0 / 45.1 / 46.5 for 32 groups);
// on the AVX-512 tier 16-group windows were 3% slower on SmolLM2 Q4_0.
#if defined(__AVX512F__)
constexpr int64_t kLockstepWindow = std::numeric_limits<int64_t>::max();
#else
constexpr int64_t kLockstepWindow = 16;
#endif

// The 16 row sums of a group in registers: one zmm (AVX-512), or two ymm halves of 8 rows (AVX2).
#if defined(__AVX512F__)
using Acc16 = __m512;
inline Acc16 acc16_zero() { return _mm512_setzero_ps(); }
inline void acc16_store(float* out, Acc16 a) { _mm512_storeu_ps(out, a); }
#else
struct Acc16 {
  __m256 h[2];
};
inline Acc16 acc16_zero() { return {{_mm256_setzero_ps(), _mm256_setzero_ps()}}; }
inline void acc16_store(float* out, Acc16 a) {
  _mm256_storeu_ps(out, a.h[0]);
  _mm256_storeu_ps(out + 8, a.h[1]);
}
#endif

// A layout L (q4_0x16, q4_1x16, q5_0x16, q5_1x16, q8_0x16, q2_kx16, q3_kx16, q4_kx16, q5_kx16, q6_kx16)
// provides
//   L::Act, L::kBlockK (weights per block), L::kBlockBytes (one block of 16 rows), L::kRows (RA:
//   activation rows per group pass), L::kPrefetchAhead (how far ahead of each block the walks prefetch, 0:
//   not at all), L::kLockstep (whether decode walks four groups at once; measured per layout),
//   L::block<R>(blk, x, acc): acc[i] plus the 16 rows' dot products of block blk with activation
//   block *x[i], for i < R (one unpack of the weights serves every row).

// Layout L as the Lockstep decode strategy (isa.h) walks it: four groups at once, each prefetched
// 2 KiB ahead. On the Intel Xeon (family 6 model 167) where it was measured, 1B Q4_K_M tg64 at 2
// threads: 34.9 / 34.9 t/s against 27.8 / 29.7 for L's own walk (4 KiB ahead, no lockstep), 29.9 /
// 30.4 for lockstep at 4 KiB, 26.2 / 27.2 at 8 KiB (docs/performance.md).
template <class L>
struct LockstepWalk : L {
  static constexpr size_t kPrefetchAhead = 2048;
  static constexpr bool kLockstep = true;
};

// Layout L as the Sequential decode strategy (isa.h) walks it: one group at a time, so each thread
// reads one sequential stream (the legacy layouts' own walk is four groups in lockstep), and no
// software prefetch in the one-row walk (the hardware's follows one stream; tiles of several rows
// keep L's). On Zen 4, 1B Q4_0 tg64 at 2 threads, alternating: 51.0 t/s median against 40.4 for the
// lockstep walk; SmolLM2 Q4_0 360 against 274; then without the prefetch 58.9 against 50.4, and 1B
// Q4_K_M 40.1 against 37.4 (docs/performance.md).
template <class L>
struct SequentialWalk : L {
  static constexpr bool kLockstep = false;
  static constexpr bool kDecodePrefetch = false;
};

// Whether L's one-row walk prefetches: L::kDecodePrefetch where L says, else whenever its tiles do.
template <class L>
constexpr bool decode_prefetch() {
  if constexpr (requires { L::kDecodePrefetch; })
    return L::kDecodePrefetch && L::kPrefetchAhead > 0;
  else
    return L::kPrefetchAhead > 0;
}

// 16 rows x RA activation rows: out[i * out_stride + r].
template <class L, int RA>
inline void x16_group(int64_t nb, const std::byte* g, const std::byte* a, size_t a_stride, float* out,
                      size_t out_stride) {
  Acc16 acc[RA];
  for (auto& v : acc) v = acc16_zero();
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* blk = g + static_cast<size_t>(b) * L::kBlockBytes;
    if constexpr (L::kPrefetchAhead > 0) prefetch_ahead<L::kPrefetchAhead>(blk, L::kBlockBytes);
    const typename L::Act* x[RA];
    for (int i = 0; i < RA; ++i)
      x[i] = reinterpret_cast<const typename L::Act*>(a + static_cast<size_t>(i) * a_stride) + b;
    L::template block<RA>(blk, x, acc);
  }
  for (int i = 0; i < RA; ++i) acc16_store(out + static_cast<size_t>(i) * out_stride, acc[i]);
}

// One activation row (decode) walks NG groups in lockstep, block by block, so each thread keeps NG
// far-apart memory streams in flight (on 2 Zen 4 threads one stream reads ~40 GB/s, four ~75).
template <class L, int NG>
inline void x16_lockstep(int64_t nb, const std::byte* const* g, const std::byte* a, float* const* out) {
  Acc16 acc[NG];
  for (auto& v : acc) v = acc16_zero();
  const auto* x = reinterpret_cast<const typename L::Act*>(a);
  for (int64_t b = 0; b < nb; ++b)
    for (int q = 0; q < NG; ++q) {
      const std::byte* blk = g[q] + static_cast<size_t>(b) * L::kBlockBytes;
      if constexpr (decode_prefetch<L>()) prefetch_ahead<L::kPrefetchAhead>(blk, L::kBlockBytes);
      const typename L::Act* xb[1] = {x + b};
      L::template block<1>(blk, xb, &acc[q]);
    }
  for (int q = 0; q < NG; ++q) acc16_store(out[q], acc[q]);
}

// The decode walk of groups [g0, g1) of a list, at(i) = {group i's weights, its 16 outputs}: per
// window of kLockstepWindow groups, four groups a quarter of the window apart (where the layout
// gains by it), then the groups left one at a time.
template <class L, class At>
void x16_walk(int64_t nb, int64_t g0, int64_t g1, const std::byte* a, const At& at) {
  for (int64_t w0 = g0; w0 < g1; w0 += kLockstepWindow) {
    const int64_t wn = std::min(kLockstepWindow, g1 - w0);
    const int64_t q = L::kLockstep ? wn / 4 : 0;
    for (int64_t j = 0; j < q; ++j) {
      const std::byte* gs[4];
      float* os[4];
      for (int i = 0; i < 4; ++i) std::tie(gs[i], os[i]) = at(w0 + j + i * q);
      x16_lockstep<L, 4>(nb, gs, a, os);
    }
    for (int64_t g = w0 + 4 * q; g < w0 + wn; ++g) {
      const std::byte* gs[1];
      float* os[1];
      std::tie(gs[0], os[0]) = at(g);
      x16_lockstep<L, 1>(nb, gs, a, os);
    }
    if (wn < kLockstepWindow) break;  // the last window (and no step past the largest int64_t)
  }
}

template <class L, GemmFn Tail>
void gemm_x16(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a,
              size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const int64_t nb = k / L::kBlockK, groups = n_w / kGroupRows;
  auto group_at = [&](int64_t g) { return w + static_cast<size_t>(g * kGroupRows) * w_stride; };
  if (n_a == 1) {
    x16_walk<L>(nb, 0, groups, a, [&](int64_t g) { return std::pair{group_at(g), out + g * kGroupRows}; });
  } else {
    for (int64_t g = 0; g < groups; ++g) {
      float* o = out + g * kGroupRows;
      int64_t i = 0;
      for (; i + L::kRows <= n_a; i += L::kRows)
        x16_group<L, L::kRows>(nb, group_at(g), a + static_cast<size_t>(i) * a_stride, a_stride,
                               o + static_cast<size_t>(i) * out_stride, out_stride);
      for (; i < n_a; ++i)
        x16_group<L, 1>(nb, group_at(g), a + static_cast<size_t>(i) * a_stride, a_stride,
                        o + static_cast<size_t>(i) * out_stride, out_stride);
    }
  }
  if (const int64_t done = groups * kGroupRows; done < n_w)
    Tail(k, w + static_cast<size_t>(done) * w_stride, w_stride, n_w - done, a, a_stride, n_a, out + done,
         out_stride);
}

// GemvPartsFn: groups [g0, g1) of several matrices' lists (matmul.h) in one decode walk.
template <class L>
void gemv_parts_x16(int64_t k, const GemvParts& parts, int64_t g0, int64_t g1, const std::byte* a) {
  x16_walk<L>(k / L::kBlockK, g0, g1, a, [&](int64_t i) {
    size_t p = 0;
    while (i >= parts.start[p + 1]) ++p;
    const int64_t j = i - parts.start[p];
    return std::pair{parts.w[p] + static_cast<size_t>(j) * parts.group_bytes, parts.out[p] + j * kGroupRows};
  });
}

// A layout names where each piece of row r's block lies in its group's block once, as
// pieces(r, block, move): move(offset in the group's block, the piece in the row's block, bytes).
// The repack moves the pieces into the group (to_group); a row lookup (an embedding table that is
// also a repacked output weight) moves them back (from_group).
inline auto to_group(std::byte* blk) {
  return [blk](int64_t at, const auto* piece, size_t n) { std::memcpy(blk + at, piece, n); };
}
inline auto from_group(const std::byte* blk) {
  return [blk](int64_t at, auto* piece, size_t n) { std::memcpy(piece, blk + at, n); };
}
// The common piece: n 4-byte words of row r's block from `piece`, word i at at + 64 i + 4 r of the
// group's block, where the 16 rows' word i lie together (one 64-byte load).
template <class Move, class Piece>
void move_words(const Move& move, int64_t at, int64_t r, Piece* piece, int n) {
  for (int i = 0; i < n; ++i) move(at + 64 * i + 4 * r, piece + 4 * i, 4);
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

// Row `row` of a matrix repacked by repack_groups, back in the file layout: take(blk, r, out)
// reads row r's block of the group's block blk into out. Rows past the last full group are copied.
template <class Block, int64_t kBlock, class Take>
void unpack_group_row(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out,
                      const Take& take) {
  const int64_t nb = k / kBlock;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(Block);
  if (row >= rows / kGroupRows * kGroupRows) {
    std::memcpy(out, w + static_cast<size_t>(row) * row_bytes, row_bytes);
    return;
  }
  const std::byte* g = w + static_cast<size_t>(row / kGroupRows * kGroupRows) * row_bytes;
  for (int64_t b = 0; b < nb; ++b) {
    Block o;
    take(g + static_cast<size_t>(b) * kGroupRows * sizeof(Block), row % kGroupRows, o);
    std::memcpy(out + static_cast<size_t>(b) * sizeof(Block), &o, sizeof(Block));
  }
}

// repack and unpack_row of a layout whose row blocks (Block, kBlock weights) lie in a group's block
// where Pieces::pieces(r, block, move) moves them.
template <class Pieces, class Block, int64_t kBlock>
void repack_by_pieces(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_groups<Block, kBlock>(src, dst, rows, k, [](std::byte* blk, int64_t r, const Block& in) {
    Pieces::pieces(r, in, to_group(blk));
  });
}
template <class Pieces, class Block, int64_t kBlock>
void unpack_row_by_pieces(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_group_row<Block, kBlock>(w, rows, k, row, out, [](const std::byte* blk, int64_t r, Block& o) {
    Pieces::pieces(r, o, from_group(blk));
  });
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
