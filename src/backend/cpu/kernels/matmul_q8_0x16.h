#pragma once
// Q8_0 weights repacked once at load (weight_repack.h) into groups of 16 rows for AVX-512 VNNI,
// as q4_0x16 (matmul_q4_0x16.h). A group holds the same bytes as its 16 rows (16 x 34 per block of
// 32 weights), reordered per block as 16 f16 scales (32 bytes), then 8 chunks of 64 bytes: byte
// 4r + t of chunk h is weight 4h + t of row r plus 128 (an unsigned byte, as dpbusd wants; the
// 128 * sum(x) it adds is subtracted per block).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_x16.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#include "backend/cpu/kernels/unpack.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kQ8x16Rows = 16;
constexpr size_t kQ8x16Block = 16 * sizeof(q::BlockQ8_0);  // 544

struct Q8_0x16 {
  using Act = ActQ8;
  static constexpr int64_t kBlockK = 32;
  static constexpr size_t kBlockBytes = kQ8x16Block;
  static constexpr int kRows = 4;
  // Prefetch with four lockstep streams: 42 -> 56-65 GB/s at 2 threads; 2 KiB ahead of each
  // stream, as q4_0x16.
  static constexpr size_t kPrefetchAhead = 2048;
  static constexpr bool kLockstep = true;

  template <int RA>
  static void block(const std::byte* blk, const ActQ8* const* x, __m512* acc) {
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i w[8];
    for (int h = 0; h < 8; ++h) w[h] = _mm512_loadu_si512(blk + 32 + 64 * h);
    for (int i = 0; i < RA; ++i) acc[i] = finish(dot(w, *x[i]), dw, *x[i], acc[i]);
  }

 private:
  // Two chains, so the dpbusd latencies overlap.
  static __m512i dot(const __m512i (&w)[8], const ActQ8& x) {
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    for (int h = 0; h < 8; h += 2) {
      s0 = _mm512_dpbusd_epi32(s0, w[h], bcast4(x.qs + 4 * h));
      s1 = _mm512_dpbusd_epi32(s1, w[h + 1], bcast4(x.qs + 4 * h + 4));
    }
    return _mm512_add_epi32(s0, s1);
  }
  static __m512 finish(__m512i s, __m512 dw, const ActQ8& x, __m512 acc) {
    s = _mm512_sub_epi32(s, _mm512_set1_epi32(128 * x.sum));  // the bytes are q + 128
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(x.d)), acc);
  }
};

// The packed prefill tile (PQ8_0's layout: the same unsigned bytes, f32 scales) from a repacked
// group; a tail (rows < 16) is row-major: the plain pack.
void pack_q8_0x16(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  if (rows < kQ8x16Rows) return pack<PQ8_0>(k, w, w_stride, rows, out);
  for (int64_t b = 0; b < k / 32; ++b) {
    const std::byte* blk = w + static_cast<size_t>(b) * kQ8x16Block;
    std::byte* ch = out + static_cast<size_t>(b) * chunk_bytes<PQ8_0>();
    std::memcpy(ch, blk + 32, 512);
    _mm512_storeu_ps(ch + 512, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
  }
}

// Where row r's block lies in its group's block (matmul_x16.h's pieces); the quants as they are
// (the layout stores them + 128: flip_sign).
template <class B, class Move>
void q8_0x16_pieces(int64_t r, B& in, const Move& move) {
  move(2 * r, in.d, 2);
  move_words(move, 32, r, in.qs, 8);
}
void flip_sign(q::BlockQ8_0& b) {
  for (int8_t& v : b.qs) v = static_cast<int8_t>(static_cast<uint8_t>(v) ^ 0x80u);
}

void repack_q8_0x16(const std::byte* src, std::byte* dst, int64_t rows, int64_t k) {
  repack_groups<q::BlockQ8_0, 32>(src, dst, rows, k, [](std::byte* blk, int64_t r, const q::BlockQ8_0& in) {
    q::BlockQ8_0 u = in;
    flip_sign(u);
    q8_0x16_pieces(r, u, to_group(blk));
  });
}

void unpack_row_q8_0x16(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out) {
  unpack_group_row<q::BlockQ8_0, 32>(w, rows, k, row, out,
                                     [](const std::byte* blk, int64_t r, q::BlockQ8_0& o) {
                                       q8_0x16_pieces(r, o, from_group(blk));
                                       flip_sign(o);
                                     });
}

// The layout with its prefill pack, repack and row lookup, as the kernel table's x16_kernel
// (matmul_x86_impl.h) takes every 16-row-group layout.
struct Q8_0x16Layout : Q8_0x16 {
  static constexpr PackFn pack_group = pack_q8_0x16;
  static constexpr RepackFn repack = repack_q8_0x16;
  static constexpr UnpackRowFn unpack_row = unpack_row_q8_0x16;
};

}  // namespace
}  // namespace glass::backend::cpu::kernels
