#pragma once
// Q6_K weights repacked once at load (weight_repack.h) into groups of 16 rows, for AVX-512 VNNI,
// the same idea as q4_kx16 (matmul_q4_kx16.h). A group holds the same bytes as its 16 rows
// (16 x 210 per super-block of 256 weights), reordered per super-block as
//   16 f16 d (32 bytes); the 16 int8 sub-block scales of each row as four 32-bit words, word v of
//   the 16 rows together (4 x 64 bytes); then 2 x 2 x 8 chunks of 64 bytes of low nibbles, chunk
//   (half, a, l) holding bytes ql[64 half + 32 a + 4 l + t] of the 16 rows (byte 4r + t); then
//   2 x 8 chunks of high bits, chunk (half, l) holding bytes qh[32 half + 4 l + t] of the 16 rows.
// As in the file, one high-bit byte completes four weights: the low and high nibbles of its two
// low-nibble bytes (a = 0 and 1). Per super-block and activation row: 64 dpbusd give the 16
// sub-block sums of 16 rows (6-bit unsigned quants), minus 32 x the activation's sub-block sums,
// times the integer scales (exact in int32), then d * d_x.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kQ6x16Rows = 16;
constexpr size_t kQ6x16Block = 16 * sizeof(q::BlockQ6_K);  // 3360
constexpr size_t kQ6x16Low = 32 + 4 * 64;                  // where the low-nibble chunks start
constexpr size_t kQ6x16High = kQ6x16Low + 32 * 64;         // where the high-bit chunks start

// Sub-block j's scale of the 16 rows, sign-extended to int32 lanes.
inline __m512i q6_scale(const std::byte* blk, int j) {
  const __m512i v = _mm512_loadu_si512(blk + 32 + 64 * (j / 4));
  return _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * (j % 4)), 24);
}

// The four 6-bit quant vectors completed by high-bit chunk (half, l): weights
// 128 half + 4 l + {0, 32, 64, 96} + t of the 16 rows (byte 4r + t), as unsigned bytes.
struct Q6Quads {
  __m512i q[4];
};
inline Q6Quads q6_quads(const std::byte* blk, int half, int l) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
  const __m512i l0 = _mm512_loadu_si512(blk + kQ6x16Low + 64 * (16 * half + l));
  const __m512i l1 = _mm512_loadu_si512(blk + kQ6x16Low + 64 * (16 * half + 8 + l));
  const __m512i h = _mm512_loadu_si512(blk + kQ6x16High + 64 * (8 * half + l));
  Q6Quads o;
  o.q[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_and_si512(_mm512_slli_epi16(h, 4), m30));
  o.q[1] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_and_si512(_mm512_slli_epi16(h, 2), m30));
  o.q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4), _mm512_and_si512(h, m30));
  o.q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                           _mm512_and_si512(_mm512_srli_epi16(h, 2), m30));
  return o;
}

struct Q6_Kx16 {
  using Act = ActQ8K;
  static constexpr int64_t kBlockK = 256;
  static constexpr size_t kBlockBytes = kQ6x16Block;
  static constexpr int kRows = 2;
  static constexpr size_t kPrefetchAhead = 4096;
  // Four big super-blocks in lockstep measured slower (q4_kx16 ~57 -> ~30 GB/s at 2 threads).
  static constexpr bool kLockstep = false;

  // acc[i] plus super-block blk's 16 rows times x[i], for RA activation rows. Weights
  // 128 half + 32 s + 4 l + t (s = 0..3: the four quads of q6_quads) lie in sub-block
  // 8 half + 2 s + l / 4.
  template <int RA>
  static void block(const std::byte* blk, const ActQ8K* const* x, __m512* acc) {
    __m512i isum[RA];
    for (auto& v : isum) v = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half)
      for (int l4 = 0; l4 < 2; ++l4) {
        __m512i s[RA][4];
        for (int i = 0; i < RA; ++i)
          for (auto& v : s[i]) v = _mm512_setzero_si512();
        for (int l = 4 * l4; l < 4 * l4 + 4; ++l) {
          const Q6Quads qq = q6_quads(blk, half, l);
          for (int i = 0; i < RA; ++i)
            for (int sq = 0; sq < 4; ++sq)
              s[i][sq] =
                  _mm512_dpbusd_epi32(s[i][sq], qq.q[sq], bcast4(x[i]->qs + 128 * half + 32 * sq + 4 * l));
        }
        for (int sq = 0; sq < 4; ++sq) {
          const int j = 8 * half + 2 * sq + l4;
          const __m512i sc = q6_scale(blk, j);
          for (int i = 0; i < RA; ++i) {
            const __m512i centred = _mm512_sub_epi32(s[i][sq], _mm512_set1_epi32(32 * x[i]->bsums[j]));
            isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(centred, sc));
          }
        }
      }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    for (int i = 0; i < RA; ++i)
      acc[i] =
          _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, _mm512_set1_ps(x[i]->d)), acc[i]);
  }
};

template <GemmFn Tail>
constexpr GemmFn gemm_q6_kx16 = gemm_x16<Q6_Kx16, Tail>;

// The packed prefill tile (PQ6_K's layout: 16-weight chunks of unsigned quants, offset 32, f32
// scale d * sc per chunk) from a repacked group; a tail (rows < 16) is row-major: the plain pack.
void pack_q6_kx16(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  if (rows < kQ6x16Rows) return pack<PQ6_K>(k, w, w_stride, rows, out);
  for (int64_t b = 0; b < k / 256; ++b) {
    const std::byte* blk = w + static_cast<size_t>(b) * kQ6x16Block;
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    auto chunk = [&](int j) { return out + static_cast<size_t>(16 * b + j) * chunk_bytes<PQ6_K>(); };
    for (int half = 0; half < 2; ++half)
      for (int l = 0; l < 8; ++l) {
        const Q6Quads qq = q6_quads(blk, half, l);
        for (int sq = 0; sq < 4; ++sq)
          _mm512_storeu_si512(chunk(8 * half + 2 * sq + l / 4) + 64 * (l % 4), qq.q[sq]);
      }
    for (int j = 0; j < 16; ++j)
      _mm512_storeu_ps(chunk(j) + 16 * 16, _mm512_mul_ps(d, _mm512_cvtepi32_ps(q6_scale(blk, j))));
  }
}

// Repacks the full 16-row groups of a row-major Q6_K matrix (rows x k); tail rows are copied.
// Where row r's block lies in its group's block (matmul_x16.h's pieces).
template <class B, class Move>
void q6_kx16_pieces(int64_t r, B& in, const Move& move) {
  move(2 * r, in.d, 2);
  for (int v = 0; v < 4; ++v) move(32 + 64 * v + 4 * r, in.scales + 4 * v, 4);
  for (int c = 0; c < 32; ++c) move(kQ6x16Low + 64 * c + 4 * r, in.ql + 4 * c, 4);
  for (int c = 0; c < 16; ++c) move(kQ6x16High + 64 * c + 4 * r, in.qh + 4 * c, 4);
}

void repack_q6_kx16(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_groups<q::BlockQ6_K, 256>(src, dst, rows, k, [](std::byte* blk, int64_t r, const q::BlockQ6_K& in) {
    q6_kx16_pieces(r, in, to_group(blk));
  });
}

void unpack_row_q6_kx16(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_group_row<q::BlockQ6_K, 256>(
      w, rows, k, row, out,
      [](const std::byte* blk, int64_t r, q::BlockQ6_K& o) { q6_kx16_pieces(r, o, from_group(blk)); });
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
