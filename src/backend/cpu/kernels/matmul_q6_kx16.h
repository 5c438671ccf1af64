#pragma once
// Q6_K weights repacked once at load (weight_repack.h) into groups of 16 rows for AVX-512 VNNI,
// as q4_kx16 (matmul_q4_kx16.h). A group holds the same bytes as its 16 rows (16 x 210 per
// super-block of 256 weights), reordered per super-block as
//   16 f16 d (32 bytes); the int8 scales, sub-block j's 16 rows together (16 x 16 bytes);
//   32 low-bit chunks of 64 bytes, (half h, k & 1, u): byte 4r + t is ql[64h + 32(k & 1) + 4u + t]
//   of row r (low nibble for k < 2, high nibble for k >= 2); 16 high-bit chunks (h, u): byte
//   4r + t is qh[32h + 4u + t] of row r (bits 2k, 2k + 1 for k = 0..3).
// Weight 128h + 32k + 4u + t of a row is (nibble | high bits << 4) - 32, in sub-block
// j = 8h + 2k + u / 4 (16 weights per scale). dpbusd takes the unsigned 0..63 values; the 32 *
// bsum_j they add is subtracted per sub-block before the scale multiplies.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kQ6x16Rows = 16;
constexpr size_t kQ6x16Block = 16 * sizeof(q::BlockQ6_K);  // 3360
constexpr size_t kQ6Scales = 32, kQ6Low = 32 + 256, kQ6High = 32 + 256 + 2048;

// Weights 128h + 32k + 4u .. + 3 of the 16 rows, unsigned (0..63).
inline __m512i q6_quad(const std::byte* blk, int h, int k, int u) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(3);
  const __m512i lo = _mm512_loadu_si512(blk + kQ6Low + 64 * (16 * h + 8 * (k & 1) + u));
  const __m512i hi = _mm512_loadu_si512(blk + kQ6High + 64 * (8 * h + u));
  const __m512i nib = _mm512_and_si512(k < 2 ? lo : _mm512_srli_epi16(lo, 4), m4);
  return _mm512_or_si512(nib, _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hi, 2 * k), m3), 4));
}
inline __m512i q6_scale(const std::byte* blk, int j) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + kQ6Scales + 16 * j)));
}

template <int RA>
inline void q6_kx16_group(int64_t nb, const std::byte* g, const std::byte* a, size_t a_stride, float* out,
                          size_t out_stride) {
  __m512 acc[RA];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const std::byte* blk = g + static_cast<size_t>(b) * kQ6x16Block;
    __m512i isum[RA];
    for (auto& v : isum) v = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k)
        for (int s = 0; s < 2; ++s) {  // sub-block j = 8h + 2k + s: u = 4s .. 4s + 3
          const int j = 8 * h + 2 * k + s;
          __m512i dot[RA];
          for (auto& v : dot) v = _mm512_setzero_si512();
          for (int u = 4 * s; u < 4 * s + 4; ++u) {
            const __m512i w = q6_quad(blk, h, k, u);
            for (int i = 0; i < RA; ++i) {
              const ActQ8K& x = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b];
              dot[i] = _mm512_dpbusd_epi32(dot[i], w, bcast4(x.qs + 128 * h + 32 * k + 4 * u));
            }
          }
          const __m512i sc = q6_scale(blk, j);
          for (int i = 0; i < RA; ++i) {
            const ActQ8K& x = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b];
            const __m512i t = _mm512_sub_epi32(dot[i], _mm512_set1_epi32(32 * x.bsums[j]));
            isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(t, sc));
          }
        }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int i = 0; i < RA; ++i) {
      const float dx = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b].d;
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, _mm512_set1_ps(dx)), acc[i]);
    }
  }
  for (int i = 0; i < RA; ++i) _mm512_storeu_ps(out + static_cast<size_t>(i) * out_stride, acc[i]);
}

template <GemmFn Tail>
void gemm_q6_kx16(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a,
                  size_t a_stride, int64_t n_a, float* out, size_t out_stride) {
  const int64_t nb = k / 256, groups = n_w / kQ6x16Rows;
  for (int64_t g = 0; g < groups; ++g) {
    const std::byte* gw = w + static_cast<size_t>(g * kQ6x16Rows) * w_stride;
    float* o = out + g * kQ6x16Rows;
    int64_t i = 0;
    for (; i + 2 <= n_a; i += 2)
      q6_kx16_group<2>(nb, gw, a + static_cast<size_t>(i) * a_stride, a_stride,
                       o + static_cast<size_t>(i) * out_stride, out_stride);
    for (; i < n_a; ++i)
      q6_kx16_group<1>(nb, gw, a + static_cast<size_t>(i) * a_stride, a_stride,
                       o + static_cast<size_t>(i) * out_stride, out_stride);
  }
  if (const int64_t done = groups * kQ6x16Rows; done < n_w)
    Tail(k, w + static_cast<size_t>(done) * w_stride, w_stride, n_w - done, a, a_stride, n_a, out + done,
         out_stride);
}

// The packed prefill tile (PQ6_K's layout: 16-weight chunks of unsigned q + 32, f32 scale d * sc)
// from a repacked group; a tail (rows < 16) is row-major: the plain pack.
void pack_q6_kx16(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  if (rows < kQ6x16Rows) return pack<PQ6_K>(k, w, w_stride, rows, out);
  for (int64_t b = 0; b < k / 256; ++b) {
    const std::byte* blk = w + static_cast<size_t>(b) * kQ6x16Block;
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int h = 0; h < 2; ++h)
      for (int k4 = 0; k4 < 4; ++k4)
        for (int s = 0; s < 2; ++s) {
          const int j = 8 * h + 2 * k4 + s;
          std::byte* ch = out + static_cast<size_t>(16 * b + j) * chunk_bytes<PQ6_K>();
          for (int g = 0; g < 4; ++g) _mm512_storeu_si512(ch + 64 * g, q6_quad(blk, h, k4, 4 * s + g));
          _mm512_storeu_ps(ch + 16 * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(q6_scale(blk, j))));
        }
  }
}

void repack_q6_kx16(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  const int64_t nb = k / 256;
  const size_t row_bytes = static_cast<size_t>(nb) * sizeof(q::BlockQ6_K);
  const int64_t groups = rows / kQ6x16Rows;
  for (int64_t g = 0; g < groups; ++g) {
    const std::byte* s = src + static_cast<size_t>(g * kQ6x16Rows) * row_bytes;
    std::byte* d = dst + static_cast<size_t>(g * kQ6x16Rows) * row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      std::byte* blk = d + static_cast<size_t>(b) * kQ6x16Block;
      for (int64_t r = 0; r < kQ6x16Rows; ++r) {
        const auto& in = reinterpret_cast<const q::BlockQ6_K*>(s + static_cast<size_t>(r) * row_bytes)[b];
        std::memcpy(blk + 2 * r, in.d, 2);
        for (int j = 0; j < 16; ++j) std::memcpy(blk + kQ6Scales + 16 * j + r, &in.scales[j], 1);
        for (int h = 0; h < 2; ++h)
          for (int kk = 0; kk < 2; ++kk)
            for (int u = 0; u < 8; ++u)
              std::memcpy(blk + kQ6Low + 64 * (16 * h + 8 * kk + u) + 4 * r, in.ql + 64 * h + 32 * kk + 4 * u,
                          4);
        for (int h = 0; h < 2; ++h)
          for (int u = 0; u < 8; ++u)
            std::memcpy(blk + kQ6High + 64 * (8 * h + u) + 4 * r, in.qh + 32 * h + 4 * u, 4);
      }
    }
  }
  const size_t done = static_cast<size_t>(groups * kQ6x16Rows) * row_bytes;
  std::memcpy(dst + done, src + done, static_cast<size_t>(rows) * row_bytes - done);
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
