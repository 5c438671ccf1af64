#pragma once
// The k-quants with 16 sub-blocks of 16 weights and integer scales, Q6_K, Q3_K and Q2_K,
// repacked once at load (weight_repack.h) into groups of 16 rows for AVX-512 VNNI, the same idea as
// q4_kx16 (matmul_q4_kx16.h). A group holds the same bytes as its 16 rows, reordered per
// super-block of 256 weights. Both types split each weight into low bits and high bits the same
// way: one byte of high bits completes four weights, 128 half + 32 s + 4 l + t (s = 0..3) of
// chunk (half, l), byte t; so one driver (Sub16x16) serves all three:
//   q6_kx16 (16 x 210 bytes): 16 f16 d (32 bytes); the 16 int8 sub-block scales of each row as
//   four 32-bit words, word v of the 16 rows together (4 x 64 bytes); then 2 x 2 x 8 chunks of 64
//   bytes of low nibbles, chunk (half, a, l) holding bytes ql[64 half + 32 a + 4 l + t] of the 16
//   rows (byte 4r + t); then 2 x 8 chunks of high bits, chunk (half, l) holding bytes
//   qh[32 half + 4 l + t]. One high-bit byte completes the low and high nibbles of its two
//   low-nibble bytes (a = 0 and 1); quants 0..63, offset 32.
//   q3_kx16 (16 x 110 bytes): 16 f16 d (32 bytes); the 12 packed 6-bit scale bytes of each row as
//   three 32-bit words, word w of the 16 rows together (3 x 64 bytes); then 2 x 8 chunks of 64
//   bytes of 2-bit quants, chunk (half, l) holding bytes qs[32 half + 4 l + t] (bits 2s..2s+1:
//   weight 128 half + 32 s + 4 l + t); then 8 chunks of high bits, chunk l holding bytes
//   hmask[4 l + t] (bit 4 half + s: that weight's third bit); quants 0..7, offset 4.
//   q2_kx16 (16 x 84 bytes): 16 f16 d, 16 f16 dmin (64 bytes); the 16 scale bytes of each row (low
//   nibble: scale, high nibble: minimum) as four 32-bit words, word v of the 16 rows together
//   (4 x 64 bytes); then 2 x 8 chunks of 2-bit quants as q3_kx16's; quants 0..3.
// Per super-block and activation row: 64 dpbusd give the 16 sub-block sums of 16 rows (unsigned
// quants), minus offset x the activation's sub-block sums, times the integer scales (exact in
// int32), then d * d_x; q2_kx16 subtracts dmin * d_x * sum_j min_j * bsum_j.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

// The four quant vectors completed by high-bit chunk (half, l): weights
// 128 half + 4 l + {0, 32, 64, 96} + t of the 16 rows (byte 4r + t), as unsigned bytes.
struct Quads {
  __m512i q[4];
};

struct Q6Sub {
  using Block = q::BlockQ6_K;
  using Pack = PQ6_K;
  static constexpr int32_t kOffset = 32;
  static constexpr bool kMin = false;
  static constexpr size_t kLow = 32 + 4 * 64, kHigh = kLow + 32 * 64;

  // Sub-block j's scale of the 16 rows, sign-extended to int32 lanes.
  struct Scales {
    const std::byte* blk;
    __m512i operator()(int j) const {
      const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * (j / 4));
      return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * (j % 4)), 24);
    }
  };
  static Scales scales(const std::byte* blk) { return {blk}; }

  static Quads quads(const std::byte* blk, int half, int l) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i l0 = _mm512_loadu_si512(blk + kLow + 64 * (16 * half + l));
    const __m512i l1 = _mm512_loadu_si512(blk + kLow + 64 * (16 * half + 8 + l));
    const __m512i h = _mm512_loadu_si512(blk + kHigh + 64 * (8 * half + l));
    Quads o;
    o.q[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
    o.q[1] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
    o.q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(h, m30));
    o.q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                             _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
    return o;
  }

  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    move_words(move, 32, r, in.scales, 4);
    move_words(move, kLow, r, in.ql, 32);
    move_words(move, kHigh, r, in.qh, 16);
  }
};

struct Q3Sub {
  using Block = q::BlockQ3_K;
  using Pack = PQ3_K;
  static constexpr int32_t kOffset = 4;
  static constexpr bool kMin = false;
  static constexpr size_t kLow = 32 + 3 * 64, kHigh = kLow + 16 * 64;

  // The 16 6-bit scales of the 16 rows (unpack_q3_k's aux words, one row per lane), minus 32.
  struct Scales {
    __m512i aux[4];
    __m512i operator()(int j) const {
      const __m512i v = _mm512_and_si512(_mm512_srli_epi32(aux[j / 4], 8 * (j % 4)), _mm512_set1_epi32(0xFF));
      return _mm512_sub_epi32(v, _mm512_set1_epi32(32));
    }
  };
  static Scales scales(const std::byte* blk) {
    const __m512i a0 = _mm512_loadu_si512(blk + 32), a1 = _mm512_loadu_si512(blk + 96),
                  a2 = _mm512_loadu_si512(blk + 160);
    const __m512i k1 = _mm512_set1_epi32(0x03030303), k2 = _mm512_set1_epi32(0x0f0f0f0f);
    auto high = [&](int shift) {
      return _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(a2, shift), k1), 4);
    };
    Scales s;
    s.aux[0] = _mm512_or_si512(_mm512_and_si512(a0, k2), high(0));
    s.aux[1] = _mm512_or_si512(_mm512_and_si512(a1, k2), high(2));
    s.aux[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a0, 4), k2), high(4));
    s.aux[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(a1, 4), k2), high(6));
    return s;
  }

  static Quads quads(const std::byte* blk, int half, int l) {
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4);
    const __m512i q = _mm512_loadu_si512(blk + kLow + 64 * (8 * half + l));
    const __m512i h = _mm512_loadu_si512(blk + kHigh + 64 * l);
    Quads o;
    for (int s = 0; s < 4; ++s) {
      // Bit g = 4 half + s of each high-bit byte to bit 2 (the 32-bit shifts move each bit within
      // its byte); 0xF8: a | (b & c).
      const int g = 4 * half + s;
      const __m512i hb = g >= 2 ? _mm512_srli_epi32(h, g - 2) : _mm512_slli_epi32(h, 2 - g);
      o.q[s] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(q, 2 * s), m3), hb, m4, 0xF8);
    }
    return o;
  }

  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    move_words(move, 32, r, in.scales, 3);
    move_words(move, kLow, r, in.qs, 16);
    move_words(move, kHigh, r, in.hmask, 8);
  }
};

struct Q2Sub {
  using Block = q::BlockQ2_K;
  using Pack = PQ2_K;
  static constexpr int32_t kOffset = 0;
  static constexpr bool kMin = true;
  static constexpr size_t kScales = 64, kLow = kScales + 4 * 64;

  // Sub-block j's scale and minimum of the 16 rows, as int32 lanes.
  struct Scales {
    const std::byte* blk;
    __m512i byte(int j) const {
      const __m512i v = _mm512_loadu_si512(blk + kScales + 64 * (j / 4));
      return _mm512_and_si512(_mm512_srli_epi32(v, 8 * (j % 4)), _mm512_set1_epi32(0xFF));
    }
    __m512i operator()(int j) const { return _mm512_and_si512(byte(j), _mm512_set1_epi32(0x0F)); }
    __m512i min(int j) const { return _mm512_srli_epi32(byte(j), 4); }
  };
  static Scales scales(const std::byte* blk) { return {blk}; }

  static Quads quads(const std::byte* blk, int half, int l) {
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i q = _mm512_loadu_si512(blk + kLow + 64 * (8 * half + l));
    Quads o;
    for (int s = 0; s < 4; ++s) o.q[s] = _mm512_and_si512(_mm512_srli_epi16(q, 2 * s), m3);
    return o;
  }

  template <class B, class Move>
  static void pieces(int64_t r, B& in, const Move& move) {
    move(2 * r, in.d, 2);
    move(32 + 2 * r, in.dmin, 2);
    move_words(move, kScales, r, in.scales, 4);
    move_words(move, kLow, r, in.qs, 16);
  }
};

template <class V>
struct Sub16x16 {
  using Act = ActQ8K;
  using Block = typename V::Block;
  static constexpr int64_t kBlockK = 256;
  static constexpr size_t kBlockBytes = 16 * sizeof(Block);  // 3360, 1760 or 1344
  static constexpr int kRows = 2;
  static constexpr size_t kPrefetchAhead = 4096;
  // The Spread decode strategy's walk: four big super-blocks in lockstep measured slower on Zen 5
  // (q4_kx16 ~57 -> ~30 GB/s at 2 threads); LockstepWalk (matmul_x16.h) is the Intel one.
  static constexpr bool kLockstep = false;

  // acc[i] plus super-block blk's 16 rows times x[i], for RA activation rows. Weights
  // 128 half + 32 s + 4 l + t (s = 0..3: the four quads) lie in sub-block 8 half + 2 s + l / 4.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8K* const* x, __m512* acc) {
    const typename V::Scales sc = V::scales(blk);
    __m512i isum[RA], imin[RA];
    for (int i = 0; i < RA; ++i) isum[i] = imin[i] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half)
      for (int l4 = 0; l4 < 2; ++l4) {
        __m512i s[RA][4];
        for (int i = 0; i < RA; ++i)
          for (auto& v : s[i]) v = _mm512_setzero_si512();
        for (int l = 4 * l4; l < 4 * l4 + 4; ++l) {
          const Quads qq = V::quads(blk, half, l);
          for (int i = 0; i < RA; ++i)
            for (int sq = 0; sq < 4; ++sq)
              s[i][sq] =
                  _mm512_dpbusd_epi32(s[i][sq], qq.q[sq], bcast4(x[i]->qs + 128 * half + 32 * sq + 4 * l));
        }
        for (int sq = 0; sq < 4; ++sq) {
          const int j = 8 * half + 2 * sq + l4;
          const __m512i scale = sc(j);
          for (int i = 0; i < RA; ++i) {
            __m512i centred = s[i][sq];
            if constexpr (V::kOffset != 0)
              centred = _mm512_sub_epi32(centred, _mm512_set1_epi32(V::kOffset * x[i]->bsums[j]));
            isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(centred, scale));
            if constexpr (V::kMin)
              imin[i] =
                  _mm512_add_epi32(imin[i], _mm512_mullo_epi32(sc.min(j), _mm512_set1_epi32(x[i]->bsums[j])));
          }
        }
      }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int i = 0; i < RA; ++i) {
      const __m512 vdx = _mm512_set1_ps(x[i]->d);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, vdx), acc[i]);
      if constexpr (V::kMin) {
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
        acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[i]), _mm512_mul_ps(dmin, vdx), acc[i]);
      }
    }
  }

  // The packed prefill tile (V::Pack's layout: 16-weight chunks of unsigned quants, f32 scale
  // d * sc and, with minimums, dmin * m per chunk) from a repacked group; a tail (rows < 16) is row-major:
  // the plain pack.
  static void pack_group(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
    using P = typename V::Pack;
    if (rows < kGroupRows) return pack<P>(k, w, w_stride, rows, out);
    for (int64_t b = 0; b < k / 256; ++b) {
      const std::byte* blk = w + static_cast<size_t>(b) * kBlockBytes;
      const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
      auto chunk = [&](int j) { return out + static_cast<size_t>(16 * b + j) * chunk_bytes<P>(); };
      for (int half = 0; half < 2; ++half)
        for (int l = 0; l < 8; ++l) {
          const Quads qq = V::quads(blk, half, l);
          for (int sq = 0; sq < 4; ++sq)
            _mm512_storeu_si512(chunk(8 * half + 2 * sq + l / 4) + 64 * (l % 4), qq.q[sq]);
        }
      const typename V::Scales sc = V::scales(blk);
      for (int j = 0; j < 16; ++j) {
        _mm512_storeu_ps(chunk(j) + 16 * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc(j))));
        if constexpr (V::kMin) {
          const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
          _mm512_storeu_ps(chunk(j) + 16 * 16 + 64, _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(sc.min(j))));
        }
      }
    }
  }

  // Repacks the full 16-row groups of a row-major matrix (rows x k); tail rows are copied.
  static void repack(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
    repack_groups<Block, 256>(src, dst, rows, k, [](std::byte* blk, int64_t r, const Block& in) {
      V::pieces(r, in, to_group(blk));
    });
  }

  static void unpack_row(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
    unpack_group_row<Block, 256>(w, rows, k, row, out, [](const std::byte* blk, int64_t r, Block& o) {
      V::pieces(r, o, from_group(blk));
    });
  }
};

using Q6_Kx16 = Sub16x16<Q6Sub>;
using Q3_Kx16 = Sub16x16<Q3Sub>;
using Q2_Kx16 = Sub16x16<Q2Sub>;

}  // namespace
}  // namespace glass::backend::cpu::kernels
