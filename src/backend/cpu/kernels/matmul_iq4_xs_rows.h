#pragma once
// IQ4_XS in the file's layout on x86: its sub-block scales taken with vector ops (both tiers), and the
// AVX-512 VNNI row kernel (matmul_x86_impl.h's kernel table uses it for decode and tiles; AVX2 runs
// the k-quant rows with IQ4_XSP there).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

// IQ4_XS's 8 sub-block scales ls - 32 as int16 lanes 0-7, with SSE only: the low 4 bits from the
// nibbles of scales_l, the high 2 from scales_h (moved to the top of each lane by a multiply, then
// down).
inline __m128i iq4_xs_scales16(const q::BlockIQ4_XS& b) {
  uint32_t low_bytes;
  std::memcpy(&low_bytes, b.scales_l, 4);
  const __m128i lb = _mm_cvtsi32_si128(static_cast<int>(low_bytes)), m4 = _mm_set1_epi8(0x0F);
  const __m128i low =
      _mm_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_and_si128(lb, m4), _mm_and_si128(_mm_srli_epi16(lb, 4), m4)));
  const __m128i h = _mm_set1_epi16(static_cast<int16_t>(b.scales_h[0] | (b.scales_h[1] << 8)));
  const __m128i high = _mm_srli_epi16(
      _mm_mullo_epi16(h, _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)), 14);
  return _mm_sub_epi16(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi16(32));
}

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
// IQ4_XS with AVX-512: two 32-weight sub-blocks per instruction (their grid values by one shuffle,
// dpbusd against the Q8_K activations), each pair's 16 lanes times its two sub-block scales, summed
// exactly in int32 over the super-block and then scaled once by d_w * d_x, as ggml does. Every row
// sums in this order whatever RA is.
template <int RA>
inline void iq4_xs_rows_512(int64_t nb, const q::BlockIQ4_XS* w, const std::byte* a, size_t a_stride,
                            float* out, size_t out_stride) {
  const __m512i grid =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q::kIq4Values)));
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  __m512 acc[RA];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const q::BlockIQ4_XS& blk = w[b];
    if constexpr (RA == 1) prefetch_ahead(&blk, sizeof(blk));
    __m512i isum[RA];
    for (auto& v : isum) v = _mm512_setzero_si512();
    const __m512i scales = _mm512_castsi256_si512(_mm256_cvtepi16_epi32(iq4_xs_scales16(blk)));  // lanes 0-7
    for (int pair = 0; pair < 4; ++pair) {
      // 32 bytes of nibbles: sub-block 2 pair's weights 0-15 (low) and 16-31 (high), then 2 pair + 1's.
      const __m256i t = load256(blk.qs + 32 * pair);
      const __m256i lo = _mm256_and_si256(t, m4), hi = _mm256_and_si256(_mm256_srli_epi16(t, 4), m4);
      const __m512i idx = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_permute2x128_si256(lo, hi, 0x20)),
                                             _mm256_permute2x128_si256(lo, hi, 0x31), 1);
      const __m512i q = _mm512_shuffle_epi8(grid, idx);
      const __m512i qa = _mm512_abs_epi8(q);
      const __mmask64 negative = _mm512_movepi8_mask(q);
      // lanes 0-7 sub-block 2 pair's scale, 8-15 sub-block 2 pair + 1's
      const __m512i sc = _mm512_permutexvar_epi32(
          _mm512_inserti64x4(_mm512_set1_epi32(2 * pair), _mm256_set1_epi32(2 * pair + 1), 1), scales);
      for (int i = 0; i < RA; ++i) {
        const auto& x = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b];
        __m512i xq = _mm512_loadu_si512(x.qs + 64 * pair);
        xq = _mm512_mask_sub_epi8(xq, negative, _mm512_setzero_si512(), xq);
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qa, xq);
        isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(p, sc));
      }
    }
    const float dw = half(blk.d);
    for (int i = 0; i < RA; ++i) {
      const auto& x = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b];
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(dw * x.d), acc[i]);
    }
  }
  for (int i = 0; i < RA; ++i) out[static_cast<size_t>(i) * out_stride] = _mm512_reduce_add_ps(acc[i]);
}
#endif

}  // namespace
}  // namespace glass::backend::cpu::kernels
