#pragma once
// Q5_0, Q5_1 and Q4_1 weights repacked once at load (weight_repack.h) into groups of 16 rows for
// AVX-512 VNNI (and AVX2), as q4_0x16 (matmul_q4_0x16.h). Q5_0 and Q5_1 matter beyond Q5 files:
// llama-quantize writes Q5_0 for every Q4_K tensor and Q5_1 for every Q5_K tensor whose rows are not a
// multiple of 256 (e.g. Qwen2.5-0.5B's 896), so a Q4_K_M file of such a model is mostly Q5_0. A group holds
// the same bytes as its 16 rows (16 x 22 per block of 32 weights for Q5_0, 16 x 24 for Q5_1, 16 x 20 for
// Q4_1), reordered per block as
//   16 f16 scales d (32 bytes); Q5_1 and Q4_1: 16 f16 minimums m (32 bytes);
//   Q5_0 and Q5_1: 16 x 4 bytes of fifth bits, row r's at 4r, in lane order: bit 4 + h of byte j
//   is the fifth bit of weight 4h + j, bit h that of weight 16 + 4h + j (h, j < 4);
//   4 chunks of 64 bytes of nibbles, as q4_0x16: byte 4r + j of chunk h is byte 4h + j of row r's
//   quants (low nibble: weight 4h + j, high nibble: weight 16 + 4h + j).
// One shift of the fifth-bit lanes puts chunk h's bits at bit 4 of the bytes they belong to, so
// each 64 bytes become 16 rows' 4 unsigned 5-bit weights in a few instructions, and one dpbusd per
// 4 weights sums them with the activation bytes: decode stays memory-bound (the row-major kernels
// read 17-25 GB/s on 2 threads, q5_0x16 51-58; docs/performance.md).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"

namespace glass::backend::cpu::kernels {
namespace {

// kMin: x = d q + m (Q5_1, Q4_1; activations q8_1) rather than x = d (q - 16) (Q5_0, activations
// q8_0); kFifth: 5-bit quants (Q5_0, Q5_1) rather than 4-bit (Q4_1).
template <bool kMin, bool kFifth>
struct LegacyX16 {
  using Block =
      std::conditional_t<kFifth, std::conditional_t<kMin, q::BlockQ5_1, q::BlockQ5_0>, q::BlockQ4_1>;
  using Pack = std::conditional_t<kFifth, std::conditional_t<kMin, PQ5_1, PQ5_0>, PQ4_1>;
  using Act = ActQ8;
  static constexpr int64_t kBlockK = 32;
  static constexpr size_t kBlockBytes = 16 * sizeof(Block);  // 352, 384 or 320
  static constexpr size_t kMins = 32, kFifthAt = kMin ? 64 : 32, kNibbles = kFifthAt + (kFifth ? 64 : 0);
  static constexpr int kRows = 4;
  static constexpr size_t kPrefetchAhead = 2048;  // as q4_0x16, with four lockstep streams
  static constexpr bool kLockstep = true;

#if defined(__AVX512F__)
  // The 16 rows' weights 4h..4h+3 (lo) and 16 + 4h.. (hi) of one block, unsigned (0..31).
  static void quants(const std::byte* blk, __m512i (&lo)[4], __m512i (&hi)[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m10 = _mm512_set1_epi8(0x10);
    for (int h = 0; h < 4; ++h) {
      const __m512i v = _mm512_loadu_si512(blk + kNibbles + 64 * h);
      lo[h] = _mm512_and_si512(v, m4);
      hi[h] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
      if constexpr (kFifth) {
        // 0xF8: a | (b & c). The 32-bit shifts move each bit within its byte (by at most 4).
        const __m512i fifth = _mm512_loadu_si512(blk + kFifthAt);
        lo[h] = _mm512_ternarylogic_epi32(lo[h], _mm512_srli_epi32(fifth, h), m10, 0xF8);
        hi[h] = _mm512_ternarylogic_epi32(hi[h], _mm512_slli_epi32(fifth, 4 - h), m10, 0xF8);
      }
    }
  }

  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, __m512* acc) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i lo[4], hi[4];
    quants(blk, lo, hi);
    for (int i = 0; i < RA; ++i) {
      // Two chains, so the dpbusd latencies overlap.
      __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
      for (int h = 0; h < 4; ++h) {
        s0 = _mm512_dpbusd_epi32(s0, lo[h], bcast4(x[i]->qs + 4 * h));
        s1 = _mm512_dpbusd_epi32(s1, hi[h], bcast4(x[i]->qs + 16 + 4 * h));
      }
      __m512i s = _mm512_add_epi32(s0, s1);
      if constexpr (!kMin) s = _mm512_sub_epi32(s, _mm512_set1_epi32(16 * x[i]->sum));  // Q5_0: q - 16
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(x[i]->d)), acc[i]);
      if constexpr (kMin) {
        const __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kMins)));
        acc[i] = _mm512_fmadd_ps(m, _mm512_set1_ps(x[i]->s), acc[i]);
      }
    }
  }

  // The packed prefill tile (Pack's layout: unsigned weights, f32 scales and minimums) from a
  // repacked group; a tail (rows < 16) is row-major: the plain pack.
  static void pack_group(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
    if (rows < kGroupRows) return pack<Pack>(k, w, w_stride, rows, out);
    for (int64_t b = 0; b < k / kBlockK; ++b) {
      const std::byte* blk = w + static_cast<size_t>(b) * kBlockBytes;
      std::byte* ch = out + static_cast<size_t>(b) * chunk_bytes<Pack>();
      __m512i lo[4], hi[4];
      quants(blk, lo, hi);
      for (int h = 0; h < 4; ++h) {
        _mm512_storeu_si512(ch + 64 * h, lo[h]);
        _mm512_storeu_si512(ch + 64 * (h + 4), hi[h]);
      }
      _mm512_storeu_ps(ch + 16 * 32,
                       _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
      if constexpr (kMin)
        _mm512_storeu_ps(ch + 16 * 32 + 64,
                         _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kMins))));
    }
  }

#else
  // AVX2: the same bytes as two halves of 8 rows (hh: rows 8hh..8hh+7, 32 bytes of each chunk).
  static void quants(const std::byte* blk, int hh, __m256i (&lo)[4], __m256i (&hi)[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m10 = _mm256_set1_epi8(0x10);
    for (int h = 0; h < 4; ++h) {
      const __m256i v =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kNibbles + 64 * h + 32 * hh));
      lo[h] = _mm256_and_si256(v, m4);
      hi[h] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
      if constexpr (kFifth) {
        const __m256i fifth = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + kFifthAt + 32 * hh));
        lo[h] = _mm256_or_si256(lo[h], _mm256_and_si256(_mm256_srli_epi32(fifth, h), m10));
        hi[h] = _mm256_or_si256(hi[h], _mm256_and_si256(_mm256_slli_epi32(fifth, 4 - h), m10));
      }
    }
  }
  static __m256 halves(const std::byte* p, int hh) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * hh)));
  }

  // maddubs's int16 pair sums hold kPairs (matmul_x86_packed.h) of the block's 8 products per lane.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, Acc16* acc) {
    constexpr int S = kPairs<Pack>;
    static_assert(S >= 2 && 8 % S == 0);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int hh = 0; hh < 2; ++hh) {
      const __m256 dw = halves(blk, hh);
      __m256i lo[4], hi[4];
      quants(blk, hh, lo, hi);
      for (int i = 0; i < RA; ++i) {
        __m256i p[8];
        for (int h = 0; h < 4; ++h) {
          p[h] = _mm256_maddubs_epi16(lo[h], bcast4_256(x[i]->qs + 4 * h));
          p[4 + h] = _mm256_maddubs_epi16(hi[h], bcast4_256(x[i]->qs + 16 + 4 * h));
        }
        __m256i s = _mm256_setzero_si256();
        for (int g = 0; g < 8; g += S) {
          __m256i s16 = p[g];
          for (int t = 1; t < S; ++t) s16 = _mm256_add_epi16(s16, p[g + t]);
          s = _mm256_add_epi32(s, _mm256_madd_epi16(s16, ones));
        }
        if constexpr (!kMin) s = _mm256_sub_epi32(s, _mm256_set1_epi32(16 * x[i]->sum));  // Q5_0: q - 16
        acc[i].h[hh] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(x[i]->d)), acc[i].h[hh]);
        if constexpr (kMin)
          acc[i].h[hh] = _mm256_fmadd_ps(halves(blk + kMins, hh), _mm256_set1_ps(x[i]->s), acc[i].h[hh]);
      }
    }
  }

  static void pack_group(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
    if (rows < kGroupRows) return pack<Pack>(k, w, w_stride, rows, out);
    for (int64_t b = 0; b < k / kBlockK; ++b) {
      const std::byte* blk = w + static_cast<size_t>(b) * kBlockBytes;
      std::byte* ch = out + static_cast<size_t>(b) * chunk_bytes<Pack>();
      for (int hh = 0; hh < 2; ++hh) {
        __m256i lo[4], hi[4];
        quants(blk, hh, lo, hi);
        for (int h = 0; h < 4; ++h) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(ch + 64 * h + 32 * hh), lo[h]);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(ch + 64 * (h + 4) + 32 * hh), hi[h]);
        }
        _mm256_storeu_ps(reinterpret_cast<float*>(ch + 16 * 32) + 8 * hh, halves(blk, hh));
        if constexpr (kMin)
          _mm256_storeu_ps(reinterpret_cast<float*>(ch + 16 * 32 + 64) + 8 * hh, halves(blk + kMins, hh));
      }
    }
  }
#endif

  // Where row r's block lies in its group's block (matmul_x16.h's pieces); the fifth bits in
  // lane order (to_lanes / from_lanes).
  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    if constexpr (kMin) move(static_cast<int64_t>(kMins) + 2 * r, in.m, 2);
    if constexpr (kFifth) move(static_cast<int64_t>(kFifthAt) + 4 * r, in.qh, 4);
    move_words(move, kNibbles, r, in.qs, 4);
  }

  static void to_lanes(uint8_t (&qh)[4]) {
    const uint32_t bits = qh_bits(qh);
    for (int j = 0; j < 4; ++j) {
      uint32_t byte = 0;
      for (int h = 0; h < 4; ++h)
        byte |= ((bits >> (4 * h + j)) & 1u) << (4 + h) | ((bits >> (16 + 4 * h + j)) & 1u) << h;
      qh[j] = static_cast<uint8_t>(byte);
    }
  }
  static void from_lanes(uint8_t (&qh)[4]) {
    uint32_t bits = 0;
    for (int j = 0; j < 4; ++j)
      for (int h = 0; h < 4; ++h)
        bits |= ((qh[j] >> (4 + h)) & 1u) << (4 * h + j) | ((qh[j] >> h) & 1u) << (16 + 4 * h + j);
    for (int j = 0; j < 4; ++j) qh[j] = static_cast<uint8_t>(bits >> (8 * j));
  }

  // Repacks the full 16-row groups of a row-major matrix (rows x k); tail rows are copied.
  static void repack(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
    repack_groups<Block, kBlockK>(src, dst, rows, k, [](std::byte* blk, int64_t r, const Block& in) {
      Block u = in;
      if constexpr (kFifth) to_lanes(u.qh);
      pieces(r, u, to_group(blk));
    });
  }

  static void unpack_row(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
    unpack_group_row<Block, kBlockK>(w, rows, k, row, out, [](const std::byte* blk, int64_t r, Block& o) {
      pieces(r, o, from_group(blk));
      if constexpr (kFifth) from_lanes(o.qh);
    });
  }
};

using Q5_0x16 = LegacyX16<false, true>;
using Q5_1x16 = LegacyX16<true, true>;
using Q4_1x16 = LegacyX16<true, false>;

}  // namespace
}  // namespace glass::backend::cpu::kernels
