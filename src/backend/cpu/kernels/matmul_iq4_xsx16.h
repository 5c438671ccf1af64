#pragma once
// IQ4_XS weights repacked once at load into groups of 16 rows for AVX-512 VNNI, as q4_kx16
// (matmul_q4_kx16.h). A group holds the same bytes as its 16 rows (16 x 136 per super-block of 256
// weights), reordered per super-block as
//   16 f16 d (32 bytes), 16 scales_h (32 bytes), 16 scales_l as 32-bit words (64 bytes); then 8 x 4
//   chunks of 64 bytes: byte 4r + t of chunk (ib, h) is byte 16 ib + 4h + t of row r's nibbles (low
//   nibble: weight 4h + t of sub-block ib, high nibble: weight 16 + 4h + t).
// The 6-bit sub-block scales of 16 rows come out at once (one row per 32-bit lane). The nibbles index
// the grid's values + 128 (iq4_grid_unsigned, one shuffle per 64 bytes); per sub-block and activation
// row 8 dpbusd give the 16 rows' sums, less 128 x the activations' sum, times the integer scales
// (exact in int32 over the super-block), then d * d_x.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_iq4_nlx16.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

struct IQ4_XSx16 {
  using Block = q::BlockIQ4_XS;
  using Act = ActQ8K;
  static constexpr int64_t kBlockK = 256;
  static constexpr size_t kBlockBytes = 16 * sizeof(Block);  // 2176
  static constexpr size_t kQuants = 128;
  static constexpr int kRows = 2;
  static constexpr size_t kPrefetchAhead = 4096;  // as q4_kx16
  static constexpr bool kLockstep = false;

  // The 16 rows' scales_l and scales_h words (one row per 32-bit lane), loaded once per super-block.
  struct Scales {
    __m512i low, high;
  };
  static Scales scales(const std::byte* blk) {
    return {_mm512_loadu_si512(blk + 64),
            _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)))};
  }
  // Sub-block ib's scale ls - 32 of each of the 16 rows.
  static __m512i scale(const Scales& s, int ib) {
    const __m512i l = _mm512_and_si512(_mm512_srli_epi32(s.low, 4 * ib), _mm512_set1_epi32(0xF));
    const __m512i h = _mm512_and_si512(_mm512_srli_epi32(s.high, 2 * ib), _mm512_set1_epi32(3));
    return _mm512_sub_epi32(_mm512_or_si512(l, _mm512_slli_epi32(h, 4)), _mm512_set1_epi32(32));
  }

  // Chunk (ib, h)'s grid values + 128: lo, weights 4h + t, and hi, 16 + 4h + t, of the 16 rows.
  static void chunk(const std::byte* blk, int ib, int h, __m512i grid, __m512i& lo, __m512i& hi) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512(blk + kQuants + 64 * (4 * ib + h));
    lo = _mm512_shuffle_epi8(grid, _mm512_and_si512(v, m4));
    hi = _mm512_shuffle_epi8(grid, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
  }

  template <int RA>
  static void block(const std::byte* blk, const ActQ8K* const* x, __m512* acc) {
    const __m512i grid = iq4_grid_unsigned();
    const Scales sc_words = scales(blk);
    __m512i isum[RA];
    for (auto& v : isum) v = _mm512_setzero_si512();
    for (int ib = 0; ib < 8; ++ib) {
      __m512i s_lo[RA], s_hi[RA];  // two chains, so the dpbusd latencies overlap
      for (int i = 0; i < RA; ++i) s_lo[i] = s_hi[i] = _mm512_setzero_si512();
      for (int h = 0; h < 4; ++h) {
        __m512i lo, hi;
        chunk(blk, ib, h, grid, lo, hi);
        for (int i = 0; i < RA; ++i) {
          s_lo[i] = _mm512_dpbusd_epi32(s_lo[i], lo, bcast4(x[i]->qs + 32 * ib + 4 * h));
          s_hi[i] = _mm512_dpbusd_epi32(s_hi[i], hi, bcast4(x[i]->qs + 32 * ib + 16 + 4 * h));
        }
      }
      const __m512i sc = scale(sc_words, ib);
      for (int i = 0; i < RA; ++i) {
        const int32_t sum_x = x[i]->bsums[2 * ib] + x[i]->bsums[2 * ib + 1];
        const __m512i s =
            _mm512_sub_epi32(_mm512_add_epi32(s_lo[i], s_hi[i]), _mm512_set1_epi32(128 * sum_x));
        isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(s, sc));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int i = 0; i < RA; ++i)
      acc[i] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, _mm512_set1_ps(x[i]->d)), acc[i]);
  }

  // The packed prefill tile (PIQ4_XS's layout: 32-weight chunks of grid values + 128, f32 scale
  // d * (ls - 32)) from a repacked group; a tail (rows < 16) is row-major: the plain pack.
  static void pack_group(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
    if (rows < kGroupRows) return pack<PIQ4_XS>(k, w, w_stride, rows, out);
    const __m512i grid = iq4_grid_unsigned();
    for (int64_t b = 0; b < k / 256; ++b) {
      const std::byte* blk = w + static_cast<size_t>(b) * kBlockBytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
      const Scales sc_words = scales(blk);
      for (int ib = 0; ib < 8; ++ib) {
        std::byte* ch = out + static_cast<size_t>(8 * b + ib) * chunk_bytes<PIQ4_XS>();
        for (int h = 0; h < 4; ++h) {
          __m512i lo, hi;
          chunk(blk, ib, h, grid, lo, hi);
          _mm512_storeu_si512(ch + 64 * h, lo);
          _mm512_storeu_si512(ch + 64 * (4 + h), hi);
        }
        _mm512_storeu_ps(ch + 16 * 32, _mm512_mul_ps(d, _mm512_cvtepi32_ps(scale(sc_words, ib))));
      }
    }
  }

  // Where row r's block lies in its group's block (matmul_x16.h's pieces).
  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    move(32 + 2 * r, in.scales_h, 2);
    move_words(move, 64, r, in.scales_l, 1);
    move_words(move, kQuants, r, in.qs, 32);  // chunk (ib, h) is word 4 ib + h
  }

  // Repacks the full 16-row groups of a row-major matrix (rows x k); tail rows are copied.
  static constexpr RepackFn repack = repack_by_pieces<IQ4_XSx16, Block, 256>;
  static constexpr UnpackRowFn unpack_row = unpack_row_by_pieces<IQ4_XSx16, Block, 256>;
};

}  // namespace
}  // namespace glass::backend::cpu::kernels
