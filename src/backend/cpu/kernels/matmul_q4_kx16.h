#pragma once
// Q4_K weights repacked once at load (weight_repack.h) into groups of 16 rows, for AVX-512 VNNI,
// the same idea as q4_0x16 (matmul_q4_0x16.h). A group holds the same bytes as its 16 rows
// (16 x 144 per super-block of 256 weights), reordered per super-block as
//   16 f16 d, 16 f16 dmin (64 bytes); the 12 packed scale/min bytes of each row as three 32-bit
//   words, word w of the 16 rows together (3 x 64 bytes); then 4 x 8 chunks of 64 bytes: byte
//   4r + t of chunk (c, h) is byte 32c + 4h + t of row r's quants (low nibble: weight
//   64c + 4h + t, in sub-block 2c; high nibble: weight 64c + 32 + 4h + t, in sub-block 2c + 1).
// The 6-bit scales and minimums are unpacked for 16 rows at once (one row per 32-bit lane) with
// ggml's mask arithmetic. Per super-block and activation row: 64 dpbusd give the 8 sub-block sums
// of 16 rows, times their integer scales (exact in int32), then d * d_x, minus
// dmin * d_x * sum_j min_j * bsum_j.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kK16Rows = 16;

// Scales (lanes: rows) of sub-blocks 0-3 / 4-7 and minimums 0-3 / 4-7, one byte each per lane.
struct K4Scales {
  __m512i s03, s47, m03, m47;
};
inline K4Scales k4_scales(const std::byte* blk) {
  const __m512i u0 = _mm512_loadu_si512(blk + 64), u1 = _mm512_loadu_si512(blk + 128),
                u2 = _mm512_loadu_si512(blk + 192);
  const __m512i k1 = _mm512_set1_epi32(0x3f3f3f3f), k2 = _mm512_set1_epi32(0x0f0f0f0f),
                k3 = _mm512_set1_epi32(0x03030303);
  K4Scales s;
  s.s03 = _mm512_and_si512(u0, k1);
  s.m03 = _mm512_and_si512(u1, k1);
  s.s47 = _mm512_or_si512(_mm512_and_si512(u2, k2),
                          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u0, 6), k3), 4));
  s.m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), k2),
                          _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(u1, 6), k3), 4));
  return s;
}
// Byte j (0-7) of every lane of the pair (lo for j < 4, hi otherwise), as int32.
inline __m512i k4_byte(__m512i lo, __m512i hi, int j) {
  const __m512i v = j < 4 ? lo : hi;
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * (j & 3)), _mm512_set1_epi32(0xFF));
}

// Q4_K (kFifth false) or Q5_K (kFifth: Q4_K's layout plus each row's 32 bytes of fifth bits,
// qh, as 8 words of 4 bytes, word h of the 16 rows together (8 x 64 bytes, before the quants):
// byte 4r + t of word h is qh[4h + t] of row r, whose bit 2c / 2c + 1 is the fifth bit of chunk
// (c, h)'s byte 4r + t's low / high nibble. A shift within each byte puts it at bit 4.) Q5_K
// matters beside Q5_K_M's own tensors: it is Q4_K_M's and Q5_K_M's most common type.
template <bool kFifth>
struct Kx16 {
  using Block = std::conditional_t<kFifth, q::BlockQ5_K, q::BlockQ4_K>;
  using Pack = std::conditional_t<kFifth, PQ5_K, PQ4_K>;
  using Act = ActQ8K;
  static constexpr int64_t kBlockK = 256;
  static constexpr size_t kBlockBytes = 16 * sizeof(Block);  // 2304 or 2816
  static constexpr size_t kFifthAt = 64 + 3 * 64, kQuants = kFifthAt + (kFifth ? 8 * 64 : 0);
  static constexpr int kRows = 2;
  static constexpr size_t kPrefetchAhead = 4096;
  // The Spread decode strategy's walk: four big super-blocks in lockstep measured slower on Zen 5
  // (q4_kx16 ~57 -> ~30 GB/s at 2 threads); LockstepWalk (matmul_x16.h) is the Intel one.
  static constexpr bool kLockstep = false;

  // Chunk (c, h)'s weights as unsigned bytes: lo, 64c + 4h + t (sub-block 2c), and hi,
  // 64c + 32 + 4h + t (sub-block 2c + 1), of the 16 rows (byte 4r + t).
  static void chunk(const std::byte* blk, int c, int h, __m512i& lo, __m512i& hi) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512(blk + kQuants + 64 * (8 * c + h));
    lo = _mm512_and_si512(v, m4);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    if constexpr (kFifth) {
      // 0xF8: a | (b & c); the 32-bit shifts move each bit within its byte (by at most 4).
      const __m512i f = _mm512_loadu_si512(blk + kFifthAt + 64 * h), m10 = _mm512_set1_epi8(0x10);
      const __m512i f_lo = c < 2 ? _mm512_slli_epi32(f, 4 - 2 * c) : _mm512_srli_epi32(f, 2 * c - 4);
      const __m512i f_hi = c < 2 ? _mm512_slli_epi32(f, 3 - 2 * c) : _mm512_srli_epi32(f, 2 * c - 3);
      lo = _mm512_ternarylogic_epi32(lo, f_lo, m10, 0xF8);
      hi = _mm512_ternarylogic_epi32(hi, f_hi, m10, 0xF8);
    }
  }

  // acc[i] plus super-block blk's 16 rows times x[i], for RA activation rows.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8K* const* x, __m512* acc) {
    const K4Scales sc = k4_scales(blk);
    __m512i isum[RA], imin[RA];
    for (int i = 0; i < RA; ++i) isum[i] = imin[i] = _mm512_setzero_si512();
    for (int c = 0; c < 4; ++c) {
      __m512i lo_sum[RA], hi_sum[RA];
      for (int i = 0; i < RA; ++i) lo_sum[i] = hi_sum[i] = _mm512_setzero_si512();
      for (int h = 0; h < 8; ++h) {
        __m512i lo, hi;
        chunk(blk, c, h, lo, hi);
        for (int i = 0; i < RA; ++i) {
          lo_sum[i] = _mm512_dpbusd_epi32(lo_sum[i], lo, bcast4(x[i]->qs + 64 * c + 4 * h));
          hi_sum[i] = _mm512_dpbusd_epi32(hi_sum[i], hi, bcast4(x[i]->qs + 64 * c + 32 + 4 * h));
        }
      }
      const __m512i s_lo = k4_byte(sc.s03, sc.s47, 2 * c), s_hi = k4_byte(sc.s03, sc.s47, 2 * c + 1);
      const __m512i m_lo = k4_byte(sc.m03, sc.m47, 2 * c), m_hi = k4_byte(sc.m03, sc.m47, 2 * c + 1);
      for (int i = 0; i < RA; ++i) {
        isum[i] = _mm512_add_epi32(isum[i], _mm512_add_epi32(_mm512_mullo_epi32(lo_sum[i], s_lo),
                                                             _mm512_mullo_epi32(hi_sum[i], s_hi)));
        const int32_t b_lo = x[i]->bsums[4 * c] + x[i]->bsums[4 * c + 1],
                      b_hi = x[i]->bsums[4 * c + 2] + x[i]->bsums[4 * c + 3];
        imin[i] =
            _mm512_add_epi32(imin[i], _mm512_add_epi32(_mm512_mullo_epi32(m_lo, _mm512_set1_epi32(b_lo)),
                                                       _mm512_mullo_epi32(m_hi, _mm512_set1_epi32(b_hi))));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
    for (int i = 0; i < RA; ++i) {
      const __m512 vdx = _mm512_set1_ps(x[i]->d);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, vdx), acc[i]);
      acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[i]), _mm512_mul_ps(dmin, vdx), acc[i]);
    }
  }

  // The packed prefill tile (Pack's layout: 32-weight chunks, f32 scale d * sc and minimum
  // dmin * m per chunk) from a repacked group; a tail (rows < 16) is row-major: the plain pack.
  static void pack_group(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
    if (rows < kK16Rows) return pack<Pack>(k, w, w_stride, rows, out);
    for (int64_t b = 0; b < k / 256; ++b) {
      const std::byte* blk = w + static_cast<size_t>(b) * kBlockBytes;
      const K4Scales sc = k4_scales(blk);
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
      const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
      for (int c = 0; c < 4; ++c) {
        std::byte* ch[2];  // the chunks of sub-blocks 2c and 2c + 1
        for (int half = 0; half < 2; ++half) {
          const int j = 2 * c + half;
          ch[half] = out + static_cast<size_t>(8 * b + j) * chunk_bytes<Pack>();
          _mm512_storeu_ps(ch[half] + 16 * 32,
                           _mm512_mul_ps(d, _mm512_cvtepi32_ps(k4_byte(sc.s03, sc.s47, j))));
          _mm512_storeu_ps(ch[half] + 16 * 32 + 64,
                           _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(k4_byte(sc.m03, sc.m47, j))));
        }
        for (int h = 0; h < 8; ++h) {
          __m512i lo, hi;
          chunk(blk, c, h, lo, hi);
          _mm512_storeu_si512(ch[0] + 64 * h, lo);
          _mm512_storeu_si512(ch[1] + 64 * h, hi);
        }
      }
    }
  }

  // Where row r's block lies in its group's block (matmul_x16.h's pieces).
  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    move(32 + 2 * r, in.dmin, 2);
    move_words(move, 64, r, in.scales, 3);
    if constexpr (kFifth) move_words(move, kFifthAt, r, in.qh, 8);
    move_words(move, kQuants, r, in.qs, 32);  // chunk (c, h) is word 8c + h
  }

  // Repacks the full 16-row groups of a row-major matrix (rows x k); tail rows are copied.
  static constexpr RepackFn repack = repack_by_pieces<Kx16, Block, 256>;
  static constexpr UnpackRowFn unpack_row = unpack_row_by_pieces<Kx16, Block, 256>;
};

using Q4_Kx16 = Kx16<false>;
using Q5_Kx16 = Kx16<true>;

}  // namespace
}  // namespace glass::backend::cpu::kernels
