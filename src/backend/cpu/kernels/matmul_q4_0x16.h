#pragma once
// Q4_0 weights repacked once at load (weight_repack.h) into groups of 16 rows, for AVX-512 VNNI
// (and AVX2, further down).
// A group holds the same bytes as its 16 rows (16 x 18 per block of 32 weights), reordered per
// block as
//   16 f16 scales (32 bytes), then 4 chunks of 64 bytes: byte 4r + j of chunk h is byte 4h + j of
//   row r's quants (low nibble: weight 4h + j, high nibble: weight 16 + 4h + j).
// so one 64-byte load and a mask give weights 4h..4h+3 of all 16 rows as unsigned bytes, and one
// dpbusd with 4 broadcast activation bytes adds their products to 16 row sums. Row-major Q4_0
// needs ~30 instructions per 2 blocks of one row; this needs ~32 per block of 16 rows, so decode
// becomes memory-bound. Rows past the last full group stay as they were (row-major).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kX16Rows = 16;
constexpr size_t kX16Block = 16 * sizeof(q::BlockQ4_0);  // 288

struct Q4_0x16 {
  using Act = ActQ8;
  static constexpr int64_t kBlockK = 32;
  static constexpr size_t kBlockBytes = kX16Block;
  static constexpr int kRows = 4;
  // Prefetch with four lockstep streams: ~10% on the 1B decode shapes. 2 KiB ahead of each stream
  // (8 KiB in all) against 4 KiB, BM_Matmul at three 1B shapes, q4_0x16 and q8_0x16: 5 of the 6
  // read 4-11% faster, one 3% slower; glass bench tg, SmolLM2 and 1B, Q4_0 and Q8_0: +3-9%.
  static constexpr size_t kPrefetchAhead = 2048;
  static constexpr bool kLockstep = true;

#if defined(__AVX512F__)
  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, __m512* acc) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i lo[4], hi[4];  // hi: the high nibbles in place, 16 x their value (see dot)
    for (int h = 0; h < 4; ++h) {
      const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * h);
      lo[h] = _mm512_and_si512(v, m4);
      hi[h] = _mm512_andnot_si512(m4, v);
    }
    for (int i = 0; i < RA; ++i) acc[i] = finish(dot(lo, hi, *x[i]), dw, *x[i], acc[i]);
  }

 private:
  // The 16 rows' integer dot products with x's quants; two chains, so the dpbusd latencies overlap.
  // The high nibbles stay in place (16 q; a lane sums 16 products of at most 240 x 128), so s1 is
  // 16 x their sum, and one exact shift per block replaces a shift per 64 bytes.
  static __m512i dot(const __m512i (&lo)[4], const __m512i (&hi)[4], const ActQ8& x) {
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    for (int h = 0; h < 4; ++h) {
      s0 = _mm512_dpbusd_epi32(s0, lo[h], bcast4(x.qs + 4 * h));
      s1 = _mm512_dpbusd_epi32(s1, hi[h], bcast4(x.qs + 16 + 4 * h));
    }
    return _mm512_add_epi32(s0, _mm512_srai_epi32(s1, 4));
  }
  static __m512 finish(__m512i s, __m512 dw, const ActQ8& x, __m512 acc) {
    s = _mm512_sub_epi32(s, _mm512_set1_epi32(8 * x.sum));  // the quants are q + 8
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(x.d)), acc);
  }
#else
  // AVX2: each 64-byte chunk as two halves of 8 rows; the nibbles shifted down, as maddubs's int16
  // pair sums hold 8 chunks' products of at most 15 x 128 (30720), one madd per half and block.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, Acc16* acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    // Decode: the activation's 8 broadcasts once for both halves.
    __m256i xb[8];
    if constexpr (RA == 1)
      for (int h = 0; h < 8; ++h) xb[h] = bcast4_256(x[0]->qs + 4 * h);
    const auto xq = [&](int i, int h) { return RA == 1 ? xb[h] : bcast4_256(x[i]->qs + 4 * h); };
    for (int hh = 0; hh < 2; ++hh) {
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * hh)));
      __m256i s16[RA];
      for (int h = 0; h < 4; ++h) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 64 * h + 32 * hh));
        const __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        for (int i = 0; i < RA; ++i) {
          const __m256i p =
              _mm256_add_epi16(_mm256_maddubs_epi16(lo, xq(i, h)), _mm256_maddubs_epi16(hi, xq(i, 4 + h)));
          s16[i] = h == 0 ? p : _mm256_add_epi16(s16[i], p);
        }
      }
      for (int i = 0; i < RA; ++i) {
        const __m256i s = _mm256_sub_epi32(_mm256_madd_epi16(s16[i], ones), _mm256_set1_epi32(8 * x[i]->sum));
        acc[i].h[hh] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(x[i]->d)), acc[i].h[hh]);
      }
    }
  }
#endif
};

// The packed prefill path's tile (matmul_x86_packed.h, PQ4_0's layout) from a repacked group: the
// nibbles become unsigned bytes, the scales f32. A tail (rows < 16) is row-major: the plain pack.
void pack_q4_0x16(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  if (rows < kX16Rows) return pack<PQ4_0>(k, w, w_stride, rows, out);
  for (int64_t b = 0; b < k / 32; ++b) {
    const std::byte* blk = w + static_cast<size_t>(b) * kX16Block;
    std::byte* ch = out + static_cast<size_t>(b) * chunk_bytes<PQ4_0>();
#if defined(__AVX512F__)
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int h = 0; h < 4; ++h) {
      const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * h);
      _mm512_storeu_si512(ch + 64 * h, _mm512_and_si512(v, m4));                              // 4h..4h+3
      _mm512_storeu_si512(ch + 64 * (h + 4), _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));  // 16 + 4h..
    }
    _mm512_storeu_ps(ch + 16 * 32,
                     _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
#else
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int h = 0; h < 8; ++h) {  // 32-byte halves of the 4 chunks
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 + 32 * h));
      auto* lo = reinterpret_cast<__m256i*>(ch + 32 * h);
      auto* hi = reinterpret_cast<__m256i*>(ch + 256 + 32 * h);
      _mm256_storeu_si256(lo, _mm256_and_si256(v, m4));
      _mm256_storeu_si256(hi, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
    }
    for (int hh = 0; hh < 2; ++hh)
      _mm256_storeu_ps(reinterpret_cast<float*>(ch + 16 * 32) + 8 * hh,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 16 * hh))));
#endif
  }
}

// Where row r's block lies in its group's block (matmul_x16.h's pieces).
template <class B, class Move>
void q4_0x16_pieces(int64_t r, B& in, const Move& move) {
  move(2 * r, in.d, 2);
  move_words(move, 32, r, in.qs, 4);
}

// Repacks the full 16-row groups of a row-major matrix of 18-byte nibble blocks (Q4_0, and IQ4_NL,
// whose blocks have its shape: matmul_iq4_nlx16.h); tail rows are copied.
template <class Block>
void repack_nibbles_x16(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_groups<Block, 32>(src, dst, rows, k, [](std::byte* blk, int64_t r, const Block& in) {
    q4_0x16_pieces(r, in, to_group(blk));
  });
}

template <class Block>
void unpack_row_nibbles_x16(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_group_row<Block, 32>(w, rows, k, row, out, [](const std::byte* blk, int64_t r, Block& o) {
    q4_0x16_pieces(r, o, from_group(blk));
  });
}

// The layout with its prefill pack, repack and row lookup, as the kernel table's x16_kernel
// (matmul_x86_impl.h) takes every 16-row-group layout.
struct Q4_0x16Layout : Q4_0x16 {
  static constexpr PackFn pack_group = pack_q4_0x16;
  static constexpr RepackFn repack = repack_nibbles_x16<q::BlockQ4_0>;
  static constexpr UnpackRowFn unpack_row = unpack_row_nibbles_x16<q::BlockQ4_0>;
};

}  // namespace
}  // namespace glass::backend::cpu::kernels
