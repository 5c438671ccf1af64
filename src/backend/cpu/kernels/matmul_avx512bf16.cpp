// BF16 matmul kernels of the avx512bf16 tier (AVX-512 with the BF16 extension: Zen 4, Zen 5,
// Cooper Lake, Sapphire Rapids and later), compiled with that tier's flags (backend/CMakeLists.txt).
// vdpbf16ps multiplies pairs of bf16 values and adds both products to an f32 lane: twice the
// multiply-adds of an f32 FMA per instruction, and the weights need no widening. Activations are
// rounded to bf16 first, as the avx512 tier's bf16 kernels do (llama.cpp's vec_dot_type for bf16
// weights), so every product is exact in f32 and results differ from that tier's only in summation
// order. Like every vdpbf16ps user, these treat bf16 subnormals (below ~1.2e-38) as zero.
// The tier has only these rows: every other matmul runs the avx512 tier's kernels (matmul.cpp).
#include "backend/cpu/kernels/matmul.h"

#if defined(__AVX512BF16__)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/cpu/kernels/half_groups.h"
#include "formats/half.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kRows = kHalfGroupRows;

// Activations: bf16 bit patterns (ActType::BF16_BITS), rounded to nearest even as
// quantize_row_bf16 rounds (NaN stays NaN), with a zero after an odd k so the last pair is whole.
void quantize_bf16_bits(const float* x, void* out, int64_t k) {
  auto* y = static_cast<uint16_t*>(out);
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m512i w = _mm512_castps_si512(_mm512_loadu_ps(x + i));
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(w, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(w, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7fffffff)),
                                                  _mm512_set1_epi32(0x7f800000));
    const __m512i r = _mm512_mask_or_epi32(rounded, nan, w, _mm512_set1_epi32(0x400000));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
  }
  for (; i < k; ++i) y[i] = formats::f32_to_bf16(x[i]);
  if (k % 2 != 0) y[k] = 0;
}

// The pair layout "bf16x16p": groups of 16 rows, stored per pair of k positions: element j of the
// group's row r is at 32 * (j / 2) + 2 * r + j % 2, so one 64-byte load holds 16 rows' pair and one
// vdpbf16ps against the broadcast activation pair adds both products to the 16 row sums. An odd k's
// last element of the 16 rows follows, k-major (16 values). Same bytes as the group's rows; rows
// past the last full group stay row-major.
inline int64_t pair_pos(int64_t j, int64_t r, int64_t k) {
  const int64_t even = k & ~int64_t{1};
  return j < even ? 32 * (j / 2) + 2 * r + j % 2 : 16 * even + r;
}

void repack_bf16x16p(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_half_groups(src, dst, rows, k, pair_pos);
}
void unpack_row_bf16x16p(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_half_group_row(w, rows, k, row, out, pair_pos);
}

inline __m512 widen_bf16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline __m512 pair_of(const uint16_t* a, int64_t jp) {
  uint32_t p;
  std::memcpy(&p, a + 2 * jp, 4);
  return _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(p)));
}

// NG groups x RA activation rows over all of k, U accumulators per output along k (for decode,
// where one chain per output would wait on the instruction's latency). With few rows (a decode) the
// tile prefetches each group 2 KiB ahead unless Prefetch is false.
template <int NG, int RA, int U, bool Prefetch = true>
void pair_tile(int64_t k, const uint16_t* g, size_t group_elems, const uint16_t* a, size_t as, float* out,
               size_t os) {
  __m512 acc[U][NG][RA];
  for (auto& u : acc)
    for (auto& q : u)
      for (auto& c : q) c = _mm512_setzero_ps();
  const int64_t pairs = k / 2;
  const auto step = [&](int u, int64_t jp) {
    __m512bh w[NG];
    for (int q = 0; q < NG; ++q) {
      const uint16_t* p = g + static_cast<size_t>(q) * group_elems + 32 * jp;
      if constexpr (RA <= 4 && Prefetch) _mm_prefetch(reinterpret_cast<const char*>(p) + 2048, _MM_HINT_T0);
      w[q] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(p));
    }
    for (int c = 0; c < RA; ++c) {
      const auto x = reinterpret_cast<__m512bh>(pair_of(a + static_cast<size_t>(c) * as, jp));
      for (int q = 0; q < NG; ++q) acc[u][q][c] = _mm512_dpbf16_ps(acc[u][q][c], w[q], x);
    }
  };
  int64_t jp = 0;
  for (; jp + U <= pairs; jp += U)
    for (int u = 0; u < U; ++u) step(u, jp + u);
  for (; jp < pairs; ++jp) step(0, jp);
  if (k % 2 != 0)  // the last element: 16 values k-major after the pairs
    for (int q = 0; q < NG; ++q) {
      const __m512 w = widen_bf16(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(g + static_cast<size_t>(q) * group_elems + 32 * pairs)));
      for (int c = 0; c < RA; ++c)
        acc[0][q][c] = _mm512_fmadd_ps(
            w, _mm512_set1_ps(formats::bf16_to_f32(a[static_cast<size_t>(c) * as + 2 * pairs])),
            acc[0][q][c]);
    }
  for (int q = 0; q < NG; ++q)
    for (int c = 0; c < RA; ++c) {
      __m512 s = acc[0][q][c];
      for (int u = 1; u < U; ++u) s = _mm512_add_ps(s, acc[u][q][c]);
      _mm512_storeu_ps(out + static_cast<size_t>(c) * os + 16 * q, s);
    }
}

// NG groups against every activation row: tiles of kActs rows (24 accumulators), then the rest. A
// prefill takes four groups x 6 rows: 10 loads per 24 vdpbf16ps, where two groups x 12 rows took 14
// (as f16x16's tiles, matmul_f16x16.h).
template <int NG>
void pair_groups(int64_t k, const uint16_t* g, size_t group_elems, const uint16_t* a, size_t as, int64_t n_a,
                 float* out, size_t os) {
  constexpr int kActs = 24 / NG;
  int64_t c = 0;
  for (; c + kActs <= n_a; c += kActs)
    pair_tile<NG, kActs, 1>(k, g, group_elems, a + static_cast<size_t>(c) * as, as, out + c * os, os);
  const uint16_t* ar = a + static_cast<size_t>(c) * as;
  float* o = out + c * os;
  const int64_t rest = n_a - c;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((rest == R + 1 ? pair_tile<NG, R + 1, (R < 3 ? 2 : 1)>(k, g, group_elems, ar, as, o, os) : void()), ...);
  }
  (std::make_integer_sequence<int, kActs - 1>{});
}

// Row-major bf16 weights (the file's layout, and a repacked matrix's row tail): RW weight rows x RA
// activation rows, 32 elements of each per instruction (the k tail as masked loads). With few
// activation rows (decode) the next RW rows are prefetched, a line per row per step.
template <int RW, int RA>
void rows_tile(int64_t k, const uint16_t* w, size_t ws, const uint16_t* a, size_t as, float* out, size_t os) {
  __m512 acc[RW][RA];
  for (auto& r : acc)
    for (auto& c : r) c = _mm512_setzero_ps();
  const auto step = [&](int64_t j, auto load) {
    __m512bh wv[RW];
    for (int r = 0; r < RW; ++r) {
      if constexpr (RA <= 4) _mm_prefetch(reinterpret_cast<const char*>(w + (RW + r) * ws + j), _MM_HINT_T0);
      wv[r] = load(w + r * ws + j);
    }
    for (int c = 0; c < RA; ++c) {
      const __m512bh av = load(a + c * as + j);
      for (int r = 0; r < RW; ++r) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv[r], av);
    }
  };
  int64_t j = 0;
  for (; j + 32 <= k; j += 32)
    step(j, [](const uint16_t* p) { return reinterpret_cast<__m512bh>(_mm512_loadu_si512(p)); });
  if (j < k) {
    const auto tail = static_cast<__mmask32>((uint64_t{1} << (k - j)) - 1);
    step(j,
         [tail](const uint16_t* p) { return reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(tail, p)); });
  }
  for (int r = 0; r < RW; ++r)
    for (int c = 0; c < RA; ++c) out[c * os + r] = _mm512_reduce_add_ps(acc[r][c]);
}

// Weight rows [0, RW) against every activation row: tiles of 6, then one of the rest.
template <int RW>
void rows_all(int64_t k, const uint16_t* w, size_t ws, const uint16_t* a, size_t as, int64_t n_a, float* out,
              size_t os) {
  constexpr int kActs = RW == 1 ? 1 : 6;
  int64_t c = 0;
  for (; c + kActs <= n_a; c += kActs) rows_tile<RW, kActs>(k, w, ws, a + c * as, as, out + c * os, os);
  const uint16_t* ar = a + c * as;
  float* o = out + c * os;
  [&]<int... R>(std::integer_sequence<int, R...>) {
    ((n_a - c == R + 1 ? rows_tile<RW, R + 1>(k, w, ws, ar, as, o, os) : void()), ...);
  }
  (std::make_integer_sequence<int, kActs - 1>{});
}

void gemm_bf16_rows(int64_t k, const std::byte* wb, size_t w_stride, int64_t n_w, const std::byte* ab,
                    size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const auto* w = reinterpret_cast<const uint16_t*>(wb);
  const auto* a = reinterpret_cast<const uint16_t*>(ab);
  const size_t ws = w_stride / 2, as = a_stride / 2;
  int64_t n = 0;
  if (n_a == 1)  // decode: eight rows' streams and chains in flight
    for (; n + 8 <= n_w; n += 8) rows_tile<8, 1>(k, w + n * ws, ws, a, as, out + n, out_stride);
  for (; n + 4 <= n_w; n += 4) rows_all<4>(k, w + n * ws, ws, a, as, n_a, out + n, out_stride);
  for (; n < n_w; ++n) rows_all<1>(k, w + n * ws, ws, a, as, n_a, out + n, out_stride);
}

// A decode's rows (n_a <= 4) against groups [0, groups), DG groups' streams at a time; returns the
// groups done. Each output's sum runs in the same order whatever DG and Prefetch.
template <int DG, bool Prefetch>
int64_t pair_decode(int64_t k, const uint16_t* w, size_t group_elems, int64_t groups, const uint16_t* a,
                    size_t as, int64_t n_a, float* out, size_t os) {
  return half_groups_decode<DG>(groups, n_a, [&]<int RA, int U>(int64_t q) {
    pair_tile<DG, RA, U, Prefetch>(k, w + static_cast<size_t>(q) * group_elems, group_elems, a, as,
                                   out + q * kRows, os);
  });
}

// A decode reads four groups' streams in lockstep (two accumulators each for one activation row),
// each prefetched 2 KiB ahead; one row under the Sequential strategy (isa.h) reads one group at a time
// with no software prefetch, the same bits (the groups past the last four take the tiles below either
// way).
template <bool Sequential>
void gemm_bf16x16p(int64_t k, const std::byte* wb, size_t w_stride, int64_t n_w, const std::byte* ab,
                   size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const auto* w = reinterpret_cast<const uint16_t*>(wb);
  const auto* a = reinterpret_cast<const uint16_t*>(ab);
  const size_t as = a_stride / 2, group_elems = static_cast<size_t>(kRows) * (w_stride / 2);
  const int64_t groups = n_w / kRows;
  int64_t q = 0;
  if (n_a <= 4) {
    if (Sequential && n_a == 1)
      q = pair_decode<1, false>(k, w, group_elems, groups / 4 * 4, a, as, n_a, out, out_stride);
    else
      q = pair_decode<4, true>(k, w, group_elems, groups, a, as, n_a, out, out_stride);
  }
  half_groups_prefill<4>(q, groups, [&]<int NG>(int64_t g) {
    pair_groups<NG>(k, w + static_cast<size_t>(g) * group_elems, group_elems, a, as, n_a, out + g * kRows,
                    out_stride);
  });
  if (const int64_t done = groups * kRows; done < n_w)
    gemm_bf16_rows(k, wb + static_cast<size_t>(done) * w_stride, w_stride, n_w - done, ab, a_stride, n_a,
                   out + done, out_stride);
}

constexpr MatmulKernel kBF16Dot = {graph::DType::BF16, ActType::BF16_BITS, quantize_bf16_bits,
                                   gemm_bf16_rows};
// The pair layout's kernel under a decode walk (DecodeStrategy, isa.h).
template <bool Sequential>
constexpr MatmulKernel bf16x16_dot() {
  return {graph::DType::BF16,
          ActType::BF16_BITS,
          quantize_bf16_bits,
          gemm_bf16x16p<Sequential>,
          nullptr,
          nullptr,
          nullptr,
          repack_bf16x16p,
          "bf16x16p",
          kRows,
          unpack_row_bf16x16p};
}
constexpr MatmulKernel kBF16x16Dot = bf16x16_dot<false>();
constexpr MatmulKernel kBF16x16DotSequential = bf16x16_dot<true>();
constexpr MatmulRow kRowsOfTier[] = {
    {&kBF16Dot}, {&kBF16x16Dot, kSpread | kLockstep}, {&kBF16x16DotSequential, kSequential}};

}  // namespace

std::span<const MatmulRow> matmul_rows_avx512bf16() { return kRowsOfTier; }

}  // namespace glass::backend::cpu::kernels

#else

namespace glass::backend::cpu::kernels {
std::span<const MatmulRow> matmul_rows_avx512bf16() { return {}; }  // not an x86 build
}  // namespace glass::backend::cpu::kernels

#endif
