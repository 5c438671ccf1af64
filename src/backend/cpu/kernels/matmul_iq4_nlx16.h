#pragma once
// IQ4_NL weights repacked once at load into groups of 16 rows for AVX-512 VNNI (and AVX2, further
// down). An IQ4_NL block has
// Q4_0's shape (an f16 scale and 16 bytes of nibbles), so a group holds its bytes in q4_0x16's order
// (matmul_q4_0x16.h): 16 f16 scales, then 4 chunks of 64 bytes, byte 4r + j of chunk h being byte
// 4h + j of row r's nibbles. The nibbles index the grid through one shuffle per 64 bytes, into the
// grid's values + 128 (unsigned bytes, as dpbusd wants; the 128 * sum(x) they add is subtracted per
// block), so a block of 16 rows costs two shuffles more than Q4_0's.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_q4_0x16.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"

namespace glass::backend::cpu::kernels {
namespace {

// The grid's values + 128, in each 16-byte lane.
inline __m128i iq4_grid_unsigned128() {
  alignas(16) uint8_t u[16];
  for (int i = 0; i < 16; ++i) u[i] = static_cast<uint8_t>(q::kIq4Values[i] + 128);
  return _mm_load_si128(reinterpret_cast<const __m128i*>(u));
}
#if defined(__AVX512F__)
inline __m512i iq4_grid_unsigned() { return _mm512_broadcast_i32x4(iq4_grid_unsigned128()); }
#endif

struct IQ4_NLx16 {
  using Act = ActQ8;
  static constexpr int64_t kBlockK = 32;
  static constexpr size_t kBlockBytes = 16 * sizeof(q::BlockIQ4_NL);  // 288
  static constexpr int kRows = 4;
  static constexpr size_t kPrefetchAhead = 2048;  // as q4_0x16
  static constexpr bool kLockstep = true;

#if defined(__AVX512F__)
  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, __m512* acc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), grid = iq4_grid_unsigned();
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i lo[4], hi[4];
    for (int h = 0; h < 4; ++h) {
      const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * h);
      lo[h] = _mm512_shuffle_epi8(grid, _mm512_and_si512(v, m4));
      hi[h] = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
    }
    for (int i = 0; i < RA; ++i) {
      const ActQ8& xi = *x[i];
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
      for (int h = 0; h < 4; ++h) {
        s0 = _mm512_dpbusd_epi32(s0, lo[h], bcast4(xi.qs + 4 * h));
        s1 = _mm512_dpbusd_epi32(s1, hi[h], bcast4(xi.qs + 16 + 4 * h));
      }
      const __m512i s = _mm512_sub_epi32(_mm512_add_epi32(s0, s1), _mm512_set1_epi32(128 * xi.sum));
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(xi.d)), acc[i]);
    }
  }
#else
  // AVX2: each 64-byte chunk as two halves of 8 rows. maddubs cannot take the grid's values + 128
  // (their pair sums would saturate int16), so the signed values go in with ggml's sign trick:
  // |q| . (x with q's sign), widened to int32 per chunk.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, Acc16* acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q::kIq4Values));
    const __m256i grid = _mm256_set_m128i(table, table);
    for (int hh = 0; hh < 2; ++hh) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * hh)));
      __m256i s[RA];
      for (auto& v : s) v = _mm256_setzero_si256();
      for (int h = 0; h < 4; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 64 * h + 32 * hh));
        const __m256i lo = _mm256_shuffle_epi8(grid, _mm256_and_si256(v, m4));
        const __m256i hi = _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
        for (int i = 0; i < RA; ++i) {
          const __m256i plo = _mm256_maddubs_epi16(alo, _mm256_sign_epi8(bcast4_256(x[i]->qs + 4 * h), lo));
          const __m256i phi =
              _mm256_maddubs_epi16(ahi, _mm256_sign_epi8(bcast4_256(x[i]->qs + 16 + 4 * h), hi));
          // each pair sum reaches 2 x 127 x 127: two of them would overflow int16, so widen each
          s[i] = _mm256_add_epi32(
              s[i], _mm256_add_epi32(_mm256_madd_epi16(plo, ones), _mm256_madd_epi16(phi, ones)));
        }
      }
      for (int i = 0; i < RA; ++i)
        acc[i].h[hh] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i]), _mm256_mul_ps(dw, _mm256_set1_ps(x[i]->d)),
                                       acc[i].h[hh]);
    }
  }
#endif
};

// The packed prefill tile (PIQ4_NL's layout: grid values + 128, f32 scales) from a repacked group;
// a tail (rows < 16) is row-major: the plain pack.
void pack_iq4_nlx16(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  if (rows < kX16Rows) return pack<PIQ4_NL>(k, w, w_stride, rows, out);
  for (int64_t b = 0; b < k / 32; ++b) {
    const std::byte* blk = w + static_cast<size_t>(b) * IQ4_NLx16::kBlockBytes;
    std::byte* ch = out + static_cast<size_t>(b) * chunk_bytes<PIQ4_NL>();
#if defined(__AVX512F__)
    const __m512i m4 = _mm512_set1_epi8(0x0F), grid = iq4_grid_unsigned();
    for (int h = 0; h < 4; ++h) {
      const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * h);
      _mm512_storeu_si512(ch + 64 * h, _mm512_shuffle_epi8(grid, _mm512_and_si512(v, m4)));
      _mm512_storeu_si512(ch + 64 * (h + 4),
                          _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)));
    }
    _mm512_storeu_ps(ch + 16 * 32,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
#else
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i grid = _mm256_set_m128i(iq4_grid_unsigned128(), iq4_grid_unsigned128());
    for (int h = 0; h < 8; ++h) {  // 32-byte halves of the 4 chunks
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * h));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ch + 32 * h),
                          _mm256_shuffle_epi8(grid, _mm256_and_si256(v, m4)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ch + 256 + 32 * h),
                          _mm256_shuffle_epi8(grid, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4)));
    }
    for (int hh = 0; hh < 2; ++hh)
      _mm256_storeu_ps(reinterpret_cast<float*>(ch + 16 * 32) + 8 * hh,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * hh))));
#endif
  }
}

struct IQ4_NLx16Layout : IQ4_NLx16 {
  static constexpr PackFn pack_group = pack_iq4_nlx16;
  static constexpr RepackFn repack = repack_nibbles_x16<q::BlockIQ4_NL>;
  static constexpr UnpackRowFn unpack_row = unpack_row_nibbles_x16<q::BlockIQ4_NL>;
};

}  // namespace
}  // namespace glass::backend::cpu::kernels
