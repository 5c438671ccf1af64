#pragma once
// F16 and BF16 weights repacked once at load (weight_repack.h) into groups of 16 rows stored k-major:
// element j of the group's row r is at g[16 * j + r]. One 16-lane vector then holds element j of
// 16 output rows, so a product is a run of FMAs against a broadcast activation: no horizontal sums
// at the end of a row, one widening (vcvtph2ps) per 16 rows instead of one per row, and a decode
// reads each group as one contiguous stream. The group occupies the same bytes as its 16 rows; the
// rows past the last full group stay row-major (the float kernels' tail). Activations are f32
// rounded through the weights' half type (matmul.h), so results equal float_gemm<W>'s up to
// summation order. W (matmul_x86_float.h's F16W or BF16W) widens a vector of halves to f32: the
// same code serves AVX-512 (16 lanes) and AVX2 (8, two vectors per group row).
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "backend/cpu/kernels/half_groups.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x86_float.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kF16x16Rows = kHalfGroupRows;

// A group's 16 rows as kV vectors of the tier (one zmm with AVX-512, two ymm with AVX2), and how
// many accumulators a tile keeps in registers (the tier has 32 or 16).
constexpr int kV = 16 / FVec::kN;
constexpr int kTileAccs = FVec::kN == 16 ? 24 : 8;

// A prefill's tile: kPrefillGroups groups x kPrefillActs activation rows. Each step of k loads the
// groups' widened weights and broadcasts one element per activation row; four groups x 6 rows feed
// 24 FMAs with 10 loads where two groups x 12 rows took 14, and AVX2's one group x 6 rows (12
// accumulators, 15 of its 16 registers) 8 loads per 12 FMAs where two groups x 2 rows took 6 per 8.
// On Zen 4 both ran the 1B F16 prefill 10-30% faster (docs/performance.md).
constexpr int kPrefillGroups = FVec::kN == 16 ? 4 : 1;
constexpr int kPrefillActs = 6;
// Activation rows per tile of NG groups: the prefill tile's, else as many as kTileAccs allow
// (AVX-512: 12 with two groups, 24 with one).
constexpr int tile_acts(int ng) { return ng == kPrefillGroups ? kPrefillActs : kTileAccs / (ng * kV); }

// NG groups (16 * NG rows) x RA activation rows over all of k; U accumulators per output vector
// along k (for few activation rows, where one chain per output would wait on FMA latency). With
// few rows (a decode) the tile prefetches each group 2 KiB ahead unless Prefetch is false.
template <class W, int NG, int RA, int U, bool Prefetch = true>
inline void f16x16_tile(int64_t k, const uint16_t* g, size_t group_elems, const float* a, size_t as,
                        float* out, size_t os) {
  using V = FVec::V;
  V acc[U][NG][kV][RA];
  for (auto& u : acc)
    for (auto& q : u)
      for (auto& h : q)
        for (auto& c : h) c = FVec::zero();
  int64_t j = 0;
  const auto step = [&](int u, int64_t jj) {
    V w[NG][kV];
    for (int q = 0; q < NG; ++q) {
      const uint16_t* p = g + static_cast<size_t>(q) * group_elems + 16 * jj;
      if constexpr (RA <= 4 && Prefetch)
        _mm_prefetch(reinterpret_cast<const char*>(p + 16 * 64), _MM_HINT_T0);
      for (int h = 0; h < kV; ++h) w[q][h] = W::load(p + FVec::kN * h);
    }
    for (int c = 0; c < RA; ++c) {
      const V x = FVec::set1(a[static_cast<size_t>(c) * as + static_cast<size_t>(jj)]);
      for (int q = 0; q < NG; ++q)
        for (int h = 0; h < kV; ++h) acc[u][q][h][c] = FVec::fma(w[q][h], x, acc[u][q][h][c]);
    }
  };
  for (; j + U <= k; j += U)
    for (int u = 0; u < U; ++u) step(u, j + u);
  for (; j < k; ++j) step(0, j);
  for (int q = 0; q < NG; ++q)
    for (int h = 0; h < kV; ++h)
      for (int c = 0; c < RA; ++c) {
        V s = acc[0][q][h][c];
        for (int u = 1; u < U; ++u) s = FVec::add(s, acc[u][q][h][c]);
        FVec::store(out + static_cast<size_t>(c) * os + 16 * q + FVec::kN * h, s);
      }
}

// NG groups against every activation row: tiles of kActs rows, then one tile of the rest.
template <class W, int NG>
inline void f16x16_groups(int64_t k, const uint16_t* g, size_t group_elems, const float* a, size_t as,
                          int64_t n_a, float* out, size_t os) {
  constexpr int kActs = tile_acts(NG);
  int64_t c = 0;
  for (; c + kActs <= n_a; c += kActs)
    f16x16_tile<W, NG, kActs, 1>(k, g, group_elems, a + static_cast<size_t>(c) * as, as, out + c * os, os);
  const float* ar = a + static_cast<size_t>(c) * as;
  float* o = out + c * os;
  const int64_t rest = n_a - c;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((rest == R + 1 ? f16x16_tile<W, NG, R + 1, (R < 3 ? 2 : 1)>(k, g, group_elems, ar, as, o, os) : void()),
     ...);
  }
  (std::make_integer_sequence<int, kActs - 1>{});
}

// A decode's rows (n_a <= 4) against groups [0, groups), DG groups' streams at a time; returns the
// groups done. Each output's sum runs in the same order whatever DG and Prefetch.
template <class W, int DG, bool Prefetch>
int64_t f16x16_decode(int64_t k, const uint16_t* w, size_t group_elems, int64_t groups, const float* a,
                      size_t as, int64_t n_a, float* out, size_t os) {
  return half_groups_decode<DG>(groups, n_a, [&]<int RA, int U>(int64_t q) {
    f16x16_tile<W, DG, RA, U, Prefetch>(k, w + static_cast<size_t>(q) * group_elems, group_elems, a, as,
                                        out + q * kF16x16Rows, os);
  });
}

// The kernel of f16x16 and bf16x16. A decode reads four groups' streams in lockstep with AVX-512 (8
// accumulators for one row; two groups with AVX2), each prefetched 2 KiB ahead; one row under the
// Sequential strategy (isa.h) reads one group at a time with no software prefetch, the same bits (on
// Zen 4 it read faster: docs/performance.md).
template <class W, bool Sequential = false>
void gemm_half_x16(int64_t k, const std::byte* wb, size_t w_stride, int64_t n_w, const std::byte* ab,
                   size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const auto* w = reinterpret_cast<const uint16_t*>(wb);
  const auto* a = reinterpret_cast<const float*>(ab);
  const size_t as = a_stride / sizeof(float), group_elems = static_cast<size_t>(kF16x16Rows) * (w_stride / 2);
  const int64_t groups = n_w / kF16x16Rows;
  int64_t q = 0;
  if (n_a <= 4) {
    // The groups past the last four (AVX2: two) take the tiles below under either walk, as their
    // accumulators differ from the decode tile's for 2 and 3 rows.
    constexpr int DG = 4 / kV;
    if (Sequential && n_a == 1)
      q = f16x16_decode<W, 1, false>(k, w, group_elems, groups / DG * DG, a, as, n_a, out, out_stride);
    else
      q = f16x16_decode<W, DG, true>(k, w, group_elems, groups, a, as, n_a, out, out_stride);
  }
  half_groups_prefill<kPrefillGroups>(q, groups, [&]<int NG>(int64_t g) {
    f16x16_groups<W, NG>(k, w + static_cast<size_t>(g) * group_elems, group_elems, a, as, n_a,
                         out + g * kF16x16Rows, out_stride);
  });
  if (const int64_t done = groups * kF16x16Rows; done < n_w)
    float_gemm<W>(k, wb + static_cast<size_t>(done) * w_stride, w_stride, n_w - done, ab, a_stride, n_a,
                  out + done, out_stride);
}

// k-major: element j of the group's row r at 16 j + r.
inline int64_t k_major_pos(int64_t j, int64_t r, int64_t /*k*/) { return 16 * j + r; }
void repack_f16x16(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_half_groups(src, dst, rows, k, k_major_pos);
}
void unpack_row_f16x16(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_half_group_row(w, rows, k, row, out, k_major_pos);
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
