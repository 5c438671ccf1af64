#pragma once
// Vectorized activation converters for the x86 tiers, bit-exact with the scalar ones in
// act_quant.cpp (and so with llama.cpp's x86 quantize_row_q8_0 / q8_1 and quantize_row_q8_K_ref):
// the same float operations in the same order, rounding by _mm256_round_ps to nearest-even.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/kernels/matmul.h"

namespace glass::backend::cpu::kernels {
namespace {

// Through the vector forms: clang's _cvtss_sh macro builds a C99 compound literal (-Wpedantic).
inline float f16_round(float v) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtps_ph(_mm_set_ss(v), _MM_FROUND_TO_NEAREST_INT)));
}
inline __m256 round_even(__m256 v) {
  return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

inline float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// 32 int32 in four vectors -> 32 int8 in order (values within int8 range).
inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i a = _mm256_packs_epi32(i0, i1), b = _mm256_packs_epi32(i2, i3);
  return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <bool kWithS>
void quantize_q8_x86(const float* x, void* out, int64_t k) {
  auto* y = static_cast<ActQ8*>(out);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / 32; ++b, x += 32, ++y) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
    __m256 mx = _mm256_andnot_ps(sign, v[0]);
    for (int i = 1; i < 4; ++i) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, v[i]));
    const float amax = hmax8(mx);
    const float d = amax / 127.0f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(round_even(_mm256_mul_ps(v[i], id)));
    const int32_t sum =
        hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y->qs), pack32(q[0], q[1], q[2], q[3]));
    y->d = f16_round(d);
    y->s = kWithS ? f16_round(d * static_cast<float>(sum)) : 0.0f;
    y->sum = sum;
    y->pad = 0;
  }
}

void quantize_q8_0_x86(const float* x, void* y, int64_t k) { quantize_q8_x86<false>(x, y, k); }
void quantize_q8_1_x86(const float* x, void* y, int64_t k) { quantize_q8_x86<true>(x, y, k); }

void quantize_q8_k_x86(const float* x, void* out, int64_t k) {
  auto* y = static_cast<ActQ8K*>(out);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < k / 256; ++b, x += 256, ++y) {
    __m256 mx = _mm256_setzero_ps();
    for (int i = 0; i < 32; ++i) mx = _mm256_max_ps(mx, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)));
    const float amax = hmax8(mx);
    std::memset(y, 0, sizeof(ActQ8K));
    if (amax == 0.0f) continue;
    float max = 0.0f;  // the first x of largest magnitude, as the scalar scan finds it
    for (int j = 0; j < 256; ++j)
      if (x[j] == amax || x[j] == -amax) {
        max = x[j];
        break;
      }
    const float iscale = -127.0f / max;
    const __m256 is = _mm256_set1_ps(iscale), top = _mm256_set1_ps(127.0f);
    for (int g = 0; g < 8; ++g) {  // 32 values per group, two 16-value sums each
      __m256i q[4];
      for (int i = 0; i < 4; ++i)
        q[i] = _mm256_cvtps_epi32(
            _mm256_min_ps(round_even(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * g + 8 * i))), top));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y->qs + 32 * g), pack32(q[0], q[1], q[2], q[3]));
      y->bsums[2 * g] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      y->bsums[2 * g + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
    y->d = 1.0f / iscale;
  }
}

void quantize_f16_x86(const float* x, void* out, int64_t k) {
  auto* y = static_cast<float*>(out);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    _mm256_storeu_ps(y + i,
                     _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < k; ++i) y[i] = f16_round(x[i]);
}

// bf16 rounding to nearest-even; a NaN keeps its top bits with the quiet bit set.
void quantize_bf16_x86(const float* x, void* out, int64_t k) {
  auto* y = static_cast<float*>(out);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256i w = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(w, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(w, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    const __m256i nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(w, _mm256_set1_epi32(0x400000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);
    _mm256_storeu_ps(
        y + i, _mm256_castsi256_ps(_mm256_and_si256(r, _mm256_set1_epi32(static_cast<int>(0xffff0000u)))));
  }
  for (; i < k; ++i) {
    uint32_t w;
    std::memcpy(&w, x + i, 4);
    uint32_t r = (w & 0x7fffffffu) > 0x7f800000u ? (w | 0x400000u) : w + 0x7fffu + ((w >> 16) & 1u);
    r &= 0xffff0000u;
    std::memcpy(y + i, &r, 4);
  }
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
