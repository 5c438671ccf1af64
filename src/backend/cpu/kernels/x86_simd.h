#pragma once
// x86 building blocks of the quantized dot products (AVX2; AVX-512 VNNI where the including file is
// built for it). Internal linkage only: included by the per-ISA files matmul_avx2.cpp and
// matmul_avx512.cpp, and no out-of-line copy may be shared between them.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace glass::backend::cpu::kernels {
namespace {

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
constexpr bool kVnni = true;
#else
constexpr bool kVnni = false;
#endif

// Software prefetch of the cache lines of [p + kPrefetchAhead, p + kPrefetchAhead + bytes). Decode
// kernels stream each weight byte once; with one activation row they do too little work per byte
// for the hardware prefetcher alone to keep enough lines in flight (q4_kx16 on Zen 4/5, one row,
// 2 threads: 33-41 GB/s without, 50-52 with). Callers prefetch each block's bytes one block
// ahead of use; past the end of the weights the hints are harmless (prefetches never fault).
constexpr size_t kPrefetchAhead = 4096;
template <size_t Ahead = kPrefetchAhead>
inline void prefetch_ahead(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p) + Ahead;
  for (size_t line = 0; line < bytes; line += 64) _mm_prefetch(c + line, _MM_HINT_T0);
}

inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline float half(const uint8_t (&h)[2]) { return _cvtsh_ss(static_cast<uint16_t>(h[0] | (h[1] << 8))); }
// A legacy block's scale or offset: f16 in ggml's blocks, f32 in Q8_A's.
inline float block_float(const uint8_t (&h)[2]) { return half(h); }
inline float block_float(const uint8_t (&f)[4]) {
  float v;
  std::memcpy(&v, f, 4);
  return v;
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Sums of 4 consecutive products u[i] * s[i] (u unsigned, s signed bytes) into 8 int32 lanes.
// Without VNNI the int16 pair sums must not saturate: |u| <= 128 and |s| <= 127 keep them in range.
inline __m256i dot_u8s8(__m256i u, __m256i s) {
  if constexpr (kVnni) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
  } else {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
  }
}

// acc + sum of pairs p[2i] * q[2i] + p[2i+1] * q[2i+1] (int16 inputs, int32 lanes).
inline __m256i madd_acc(__m256i acc, __m256i p, __m256i q) {
  if constexpr (kVnni) {
    return _mm256_dpwssd_epi32(acc, p, q);
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, q));
  }
}

// 32 nibbles: the low nibbles of 16 bytes to bytes 0-15, the high nibbles to bytes 16-31.
inline __m256i nibbles32(const uint8_t* qs) {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

// 0xFF in byte j where bit j of the 32-bit x is set (ggml's bytes_from_bits_32).
inline __m256i bits32(const uint8_t* x) {
  uint32_t v;
  std::memcpy(&v, x, 4);
  const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(v)), shuf);
  const __m256i mask = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe);
  return _mm256_cmpeq_epi8(_mm256_or_si256(bytes, mask), _mm256_set1_epi64x(-1));
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
