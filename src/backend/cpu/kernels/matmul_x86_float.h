#pragma once
// x86 matmul kernels for f32 / f16 / bf16 weights: weights widened to f32 and fused-multiply-added
// with f32 activations (for f16 / bf16 weights already rounded through the half type, as llama.cpp
// rounds them). A register tile of RW weight rows x RA activation rows keeps RW * RA accumulator
// vectors, so every load feeds several FMAs: 4 x 6 tiles of 16-lane vectors with AVX-512 (32
// registers), 3 x 4 of 8 lanes with AVX2 (16). Decode (one activation row) runs RW x 1.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backend/cpu/kernels/matmul.h"

namespace glass::backend::cpu::kernels {
namespace {

#if defined(__AVX512F__)
struct FVec {
  using V = __m512;
  static constexpr int kN = 16, kRW = 4, kRA = 6;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
  static V f16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static V bf16(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
};
#else
struct FVec {
  using V = __m256;
  static constexpr int kN = 8, kRW = 3, kRA = 4;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static V f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static V bf16(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
};
#endif

struct F32W {
  using T = float;
  static FVec::V load(const float* p) { return FVec::load(p); }
  static float one(const float* p) { return *p; }
};
struct F16W {
  using T = uint16_t;
  static FVec::V load(const uint16_t* p) { return FVec::f16(p); }
  static float one(const uint16_t* p) { return _cvtsh_ss(*p); }
};
struct BF16W {
  using T = uint16_t;
  static FVec::V load(const uint16_t* p) { return FVec::bf16(p); }
  static float one(const uint16_t* p) {
    const uint32_t bits = static_cast<uint32_t>(*p) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

#if defined(__AVX512F__)
// Sums of 4 vectors as the 4 lanes of one.
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  auto fold = [](__m512 v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); };
  const __m256 ab = _mm256_hadd_ps(fold(a), fold(b));  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(fold(c), fold(d));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0123 b0123 c0123 d0123 | a4567 ...
  return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

template <class W>
inline __m512 wload_mask(const typename W::T* p, __mmask16 m) {
  if constexpr (std::is_same_v<W, F32W>) {
    return _mm512_maskz_loadu_ps(m, p);
  } else if constexpr (std::is_same_v<W, F16W>) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  } else {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
}

#endif

template <class W, int RW, int RA>
inline void float_tile(int64_t k, const typename W::T* w, size_t ws, const float* a, size_t as, float* out,
                       size_t os) {
  typename FVec::V acc[RW][RA];
  for (auto& r : acc)
    for (auto& c : r) c = FVec::zero();
  int64_t j = 0;
  for (; j + FVec::kN <= k; j += FVec::kN) {
    typename FVec::V wv[RW];
    for (int r = 0; r < RW; ++r) wv[r] = W::load(w + r * ws + j);
    for (int c = 0; c < RA; ++c) {
      const typename FVec::V av = FVec::load(a + c * as + j);
      for (int r = 0; r < RW; ++r) acc[r][c] = FVec::fma(wv[r], av, acc[r][c]);
    }
  }
#if defined(__AVX512F__)
  if (j < k) {  // the k tail as masked loads; 4 rows' sums reduced together
    const auto m = static_cast<__mmask16>((1u << (k - j)) - 1u);
    typename FVec::V wv[RW];
    for (int r = 0; r < RW; ++r) wv[r] = wload_mask<W>(w + r * ws + j, m);
    for (int c = 0; c < RA; ++c) {
      const __m512 av = _mm512_maskz_loadu_ps(m, a + c * as + j);
      for (int r = 0; r < RW; ++r) acc[r][c] = FVec::fma(wv[r], av, acc[r][c]);
    }
  }
  if constexpr (RW == 4) {
    for (int c = 0; c < RA; ++c)
      _mm_storeu_ps(out + c * os, hsum4(acc[0][c], acc[1][c], acc[2][c], acc[3][c]));
  } else {
    for (int r = 0; r < RW; ++r)
      for (int c = 0; c < RA; ++c) out[c * os + r] = FVec::sum(acc[r][c]);
  }
#else
  for (int r = 0; r < RW; ++r)
    for (int c = 0; c < RA; ++c) {
      float sum = FVec::sum(acc[r][c]);
      for (int64_t t = j; t < k; ++t) sum += W::one(w + r * ws + t) * a[c * as + t];
      out[c * os + r] = sum;
    }
#endif
}

// The weight rows [r, r + RW) against every activation row: full RA tiles, then one tile of the rest.
template <class W, int RW>
inline void float_rows(int64_t k, const typename W::T* w, size_t ws, const float* a, size_t as, int64_t n_a,
                       float* out, size_t os) {
  constexpr int RA = FVec::kRA;
  int64_t c = 0;
  for (; c + RA <= n_a; c += RA) float_tile<W, RW, RA>(k, w, ws, a + c * as, as, out + c * os, os);
  const float* ar = a + c * as;
  float* o = out + c * os;
  switch (n_a - c) {
    case 1:
      return float_tile<W, RW, 1>(k, w, ws, ar, as, o, os);
    case 2:
      return float_tile<W, RW, 2>(k, w, ws, ar, as, o, os);
    case 3:
      return float_tile<W, RW, 3>(k, w, ws, ar, as, o, os);
    case 4:
      if constexpr (RA > 4) return float_tile<W, RW, 4>(k, w, ws, ar, as, o, os);
      break;
    case 5:
      if constexpr (RA > 5) return float_tile<W, RW, 5>(k, w, ws, ar, as, o, os);
      break;
    default:
      break;
  }
}

#if defined(__AVX512F__)
// ---- AVX-512 decode (1-4 activation rows): memory-bound, so the work is keeping loads in flight.
// Groups of RW weight rows are read as RW interleaved streams while the next group is prefetched,
// the k tail is a masked load (no scalar loop), and row sums are reduced four at a time into one
// 4-lane store.
template <class W, int RW, int RA, bool Prefetch = true>
inline void gemv_rows(int64_t k, const typename W::T* w, size_t ws, const float* a, size_t as, float* out,
                      size_t os) {
  __m512 acc[RW][RA];
  for (auto& r : acc)
    for (auto& c : r) c = _mm512_setzero_ps();
  constexpr int64_t kLine = 64 / sizeof(typename W::T);  // elements per cache line
  const typename W::T* next = w + RW * ws;               // the next group's rows, read next
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    if (Prefetch && j % kLine == 0)
      for (int r = 0; r < RW; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(next + r * ws + j), _MM_HINT_T0);
    __m512 wv[RW];
    for (int r = 0; r < RW; ++r) wv[r] = W::load(w + r * ws + j);
    for (int c = 0; c < RA; ++c) {
      const __m512 av = _mm512_loadu_ps(a + c * as + j);
      for (int r = 0; r < RW; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], av, acc[r][c]);
    }
  }
  if (j < k) {
    const auto m = static_cast<__mmask16>((1u << (k - j)) - 1u);
    __m512 wv[RW];
    for (int r = 0; r < RW; ++r) wv[r] = wload_mask<W>(w + r * ws + j, m);
    for (int c = 0; c < RA; ++c) {
      const __m512 av = _mm512_maskz_loadu_ps(m, a + c * as + j);
      for (int r = 0; r < RW; ++r) acc[r][c] = _mm512_fmadd_ps(wv[r], av, acc[r][c]);
    }
  }
  if constexpr (RW % 4 == 0) {
    for (int c = 0; c < RA; ++c)
      for (int r = 0; r < RW; r += 4)
        _mm_storeu_ps(out + c * os + r, hsum4(acc[r][c], acc[r + 1][c], acc[r + 2][c], acc[r + 3][c]));
    return;
  }
  for (int c = 0; c < RA; ++c) {  // 1-3 rows
    __m512 v[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int r = 0; r < RW; ++r) v[r] = acc[r][c];
    float lanes[4];
    _mm_storeu_ps(lanes, hsum4(v[0], v[1], v[2], v[3]));
    for (int r = 0; r < RW; ++r) out[c * os + r] = lanes[r];
  }
}

template <class W, int RA>
inline void gemv(int64_t k, const typename W::T* w, size_t ws, int64_t n_w, const float* a, size_t as,
                 float* out, size_t os) {
  int64_t r = 0;
  // As many rows as the accumulators allow (16 x 1, 8 x 2, 4 x 3 or 4 vectors): more streams in
  // flight. Measured on Zen 5, one activation row: 16 rows stream ~1.4x the bytes per second of 4.
  if constexpr (RA == 1) {
    for (; r + 16 <= n_w; r += 16) gemv_rows<W, 16, RA>(k, w + r * ws, ws, a, as, out + r, os);
  }
  if constexpr (RA <= 2) {
    for (; r + 8 <= n_w; r += 8) gemv_rows<W, 8, RA>(k, w + r * ws, ws, a, as, out + r, os);
  }
  for (; r + 4 <= n_w; r += 4) gemv_rows<W, 4, RA>(k, w + r * ws, ws, a, as, out + r, os);
  switch (n_w - r) {
    case 1:
      return gemv_rows<W, 1, RA>(k, w + r * ws, ws, a, as, out + r, os);
    case 2:
      return gemv_rows<W, 2, RA>(k, w + r * ws, ws, a, as, out + r, os);
    case 3:
      return gemv_rows<W, 3, RA>(k, w + r * ws, ws, a, as, out + r, os);
    default:
      return;
  }
}
#endif

template <class W>
void float_gemm(int64_t k, const std::byte* wb, size_t w_stride, int64_t n_w, const std::byte* ab,
                size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  constexpr int RW = FVec::kRW;
  const auto* w = reinterpret_cast<const typename W::T*>(wb);
  const auto* a = reinterpret_cast<const float*>(ab);
  const size_t ws = w_stride / sizeof(typename W::T), as = a_stride / sizeof(float);
#if defined(__AVX512F__)
  switch (n_a) {
    case 1:
      return gemv<W, 1>(k, w, ws, n_w, a, as, out, out_stride);
    case 2:
      return gemv<W, 2>(k, w, ws, n_w, a, as, out, out_stride);
    case 3:
      return gemv<W, 3>(k, w, ws, n_w, a, as, out, out_stride);
    case 4:
      return gemv<W, 4>(k, w, ws, n_w, a, as, out, out_stride);
    default:
      break;
  }
#endif
  int64_t r = 0;
  for (; r + RW <= n_w; r += RW) float_rows<W, RW>(k, w + r * ws, ws, a, as, n_a, out + r, out_stride);
  for (; r < n_w; ++r) float_rows<W, 1>(k, w + r * ws, ws, a, as, n_a, out + r, out_stride);
}

// The Sequential decode strategy's f32 kernel (isa.h): one activation row reads the matrix one row
// at a time, a single sequential stream with no software prefetch, with the bits of the default's row
// groups (each row sums in the same order; AVX-512's hsum4 lanes are independent); other counts as
// float_gemm. On Zen 4, SmolLM2 F32 tg64 at 2 threads: 60.6 t/s median against 41.8 for 16-row
// groups (16 interleaved streams); tg128 without the prefetch of the next row 60.9 against 58.1. The
// AVX2 tier (three rows interleaved by default), same CPU, tg128: 57.1 against 41.4.
template <class W>
void float_gemm_sequential(int64_t k, const std::byte* wb, size_t w_stride, int64_t n_w, const std::byte* ab,
                           size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  if (n_a != 1) return float_gemm<W>(k, wb, w_stride, n_w, ab, a_stride, n_a, out, out_stride);
  const auto* w = reinterpret_cast<const typename W::T*>(wb);
  const auto* a = reinterpret_cast<const float*>(ab);
  const size_t ws = w_stride / sizeof(typename W::T);
  for (int64_t r = 0; r < n_w; ++r) {
#if defined(__AVX512F__)
    gemv_rows<W, 1, 1, false>(k, w + r * ws, ws, a, 0, out + r, out_stride);
#else
    float_tile<W, 1, 1>(k, w + r * ws, ws, a, 0, out + r, out_stride);
#endif
  }
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
