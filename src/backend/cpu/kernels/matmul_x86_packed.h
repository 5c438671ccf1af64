#pragma once
// The prefill path for quantized weights (AVX-512 VNNI; AVX2 further down). A matmul with many activation
// rows takes its weights 16 rows at a time, unpacks them once into scratch (the weights themselves stay in
// the mapped file) and multiplies that packed tile with every activation row:
//   packed chunk of C weights (C = 32, or 16 for types with 16-weight sub-blocks):
//     C/4 groups x 64 bytes: group g holds weights 4g..4g+3 of each of the 16 rows (unsigned,
//     the type's offset added); then 16 f32 scales (d, or d * sub-block scale) and, for types
//     with minimums, 16 f32 minimums (m, or dmin * sub-block min).
// One dpbusd multiplies 4 weights of all 16 rows with 4 broadcast activation bytes, so a chunk
// costs C/4 instructions per activation row and yields 16 exact integer chunk sums; they are
// scaled in f32: acc += float(sum - offset * sum(x)) * (scale * d_x) (+ min terms). Per chunk
// instead of ggml's per-lane float order, so prefill results round differently from decode's
// (~1e-7 relative).
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int kPackRows = 16;
constexpr int kPackActs = 4;  // activation rows per pass over a packed chunk

enum class MinKind { None, Legacy, KQuant };

// Activation accessors: chunk c of a row of q8_0/q8_1 blocks or of q8_k super-blocks.
struct ActLegacy {
  static const int8_t* qs(const std::byte* row, int64_t c) {
    return reinterpret_cast<const ActQ8*>(row)[c].qs;
  }
  static float d(const std::byte* row, int64_t c) { return reinterpret_cast<const ActQ8*>(row)[c].d; }
  static int32_t sum(const std::byte* row, int64_t c) { return reinterpret_cast<const ActQ8*>(row)[c].sum; }
  static float s(const std::byte* row, int64_t c) { return reinterpret_cast<const ActQ8*>(row)[c].s; }
};
template <int C>
struct ActK {
  static constexpr int kPer = 256 / C;
  static const ActQ8K& blk(const std::byte* row, int64_t c) {
    return reinterpret_cast<const ActQ8K*>(row)[c / kPer];
  }
  static const int8_t* qs(const std::byte* row, int64_t c) { return blk(row, c).qs + (c % kPer) * C; }
  static float d(const std::byte* row, int64_t c) { return blk(row, c).d; }
  static int32_t sum(const std::byte* row, int64_t c) {
    const ActQ8K& b = blk(row, c);
    const int64_t j = (c % kPer) * (C / 16);
    return C == 16 ? b.bsums[j] : b.bsums[j] + b.bsums[j + 1];
  }
  static float s(const std::byte*, int64_t) { return 0.0f; }
};

// Per type: chunk size, offset, minimum kind, and one row unpacked to unsigned values, per-chunk
// scales and minimums.
template <class Block, void (*Unpack)(const Block&, int8_t*), int kOff, int kMaxVal, bool kHasMin>
struct PackLegacy {
  static constexpr int C = 32, kOffset = kOff, kMax = kMaxVal;  // packed values lie in [0, kMax]
  static constexpr MinKind kMin = kHasMin ? MinKind::Legacy : MinKind::None;
  using Act = ActLegacy;
  static void row(const std::byte* w, int64_t k, uint8_t* vals, float* scale, float* mins) {
    const auto* b = reinterpret_cast<const Block*>(w);
    int8_t q[32];
    for (int64_t i = 0; i < k / 32; ++i) {
      Unpack(b[i], q);
      for (int j = 0; j < 32; ++j) vals[i * 32 + j] = static_cast<uint8_t>(q[j] + kOff);
      if constexpr (requires(const Block& x) { x.e; })
        scale[i] = q::e8m0_to_f32_half(b[i].e);  // MXFP4's power of two
      else
        scale[i] = block_float(b[i].d);
      if constexpr (kHasMin) mins[i] = block_float(b[i].m);
    }
  }
};
inline void unpack_q8_0(const q::BlockQ8_0& b, int8_t* out) { std::memcpy(out, b.qs, 32); }

template <class Block, void (*Unpack)(const Block&, KBlock&), int kC, int kOff, int kMaxVal, bool kHasMin>
struct PackK {
  static constexpr int C = kC, kOffset = kOff, kMax = kMaxVal;  // packed values lie in [0, kMax]
  static constexpr MinKind kMin = kHasMin ? MinKind::KQuant : MinKind::None;
  using Act = ActK<kC>;
  static void row(const std::byte* w, int64_t k, uint8_t* vals, float* scale, float* mins) {
    const auto* b = reinterpret_cast<const Block*>(w);
    KBlock u;
    constexpr int per = 256 / kC;
    for (int64_t i = 0; i < k / 256; ++i) {
      Unpack(b[i], u);
      for (int j = 0; j < 256; ++j) vals[i * 256 + j] = static_cast<uint8_t>(u.q[j] + kOff);
      const float d = _cvtsh_ss(u.d), dmin = _cvtsh_ss(u.dmin);
      for (int c = 0; c < per; ++c) {
        const int sub = c * (kC / 16);  // the first 16-weight sub-block of the chunk
        scale[i * per + c] = d * static_cast<float>(u.scale[sub]);
        if constexpr (kHasMin) mins[i * per + c] = dmin * static_cast<float>(u.min[sub]);
      }
    }
  }
};

template <class P>
constexpr size_t chunk_bytes() {
  return 16 * P::C + 64 + (P::kMin != MinKind::None ? 64 : 0);
}

template <class P>
size_t packed_bytes(int64_t k) {
  return static_cast<size_t>(k / P::C) * chunk_bytes<P>() + static_cast<size_t>(k) +
         8 * static_cast<size_t>(k / 16);
}

// Packs weight rows [0, rows) (rows <= 16; the rest zero) of w into out.
template <class P>
void pack(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* out) {
  const int64_t chunks = k / P::C;
  auto* vals = reinterpret_cast<uint8_t*>(out + static_cast<size_t>(chunks) * chunk_bytes<P>());
  auto* scale = reinterpret_cast<float*>(vals + k);
  float* mins = scale + chunks;
  for (int64_t r = 0; r < kPackRows; ++r) {
    if (r < rows) {
      P::row(w + static_cast<size_t>(r) * w_stride, k, vals, scale, mins);
    } else {
      std::memset(vals, P::kOffset, static_cast<size_t>(k));
      for (int64_t c = 0; c < chunks; ++c) scale[c] = mins[c] = 0.0f;
    }
    for (int64_t c = 0; c < chunks; ++c) {
      std::byte* ch = out + static_cast<size_t>(c) * chunk_bytes<P>();
      for (int g = 0; g < P::C / 4; ++g) std::memcpy(ch + g * 64 + r * 4, vals + c * P::C + 4 * g, 4);
      reinterpret_cast<float*>(ch + 16 * P::C)[r] = scale[c];
      if constexpr (P::kMin != MinKind::None) reinterpret_cast<float*>(ch + 16 * P::C + 64)[r] = mins[c];
    }
  }
}

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
inline __m512i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

template <class P, int RA>
inline void packed_rows(int64_t chunks, const std::byte* pk, const std::byte* a, size_t a_stride, float* out,
                        size_t out_stride, int64_t rows) {
  using Act = typename P::Act;
  constexpr int G = P::C / 4;
  __m512 acc[RA];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const std::byte* ch = pk + static_cast<size_t>(c) * chunk_bytes<P>();
    __m512i w[G];
    for (int g = 0; g < G; ++g) w[g] = _mm512_loadu_si512(ch + g * 64);
    const __m512 scale = _mm512_loadu_ps(reinterpret_cast<const float*>(ch + 16 * P::C));
    for (int i = 0; i < RA; ++i) {
      const std::byte* row = a + static_cast<size_t>(i) * a_stride;
      const int8_t* xq = Act::qs(row, c);
      __m512i isum = _mm512_setzero_si512();
      for (int g = 0; g < G; ++g) isum = _mm512_dpbusd_epi32(isum, w[g], bcast4(xq + 4 * g));
      if constexpr (P::kOffset != 0)
        isum = _mm512_sub_epi32(isum, _mm512_set1_epi32(P::kOffset * Act::sum(row, c)));
      const float dx = Act::d(row, c);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(scale, _mm512_set1_ps(dx)), acc[i]);
      if constexpr (P::kMin == MinKind::Legacy) {
        const __m512 mins = _mm512_loadu_ps(reinterpret_cast<const float*>(ch + 16 * P::C + 64));
        acc[i] = _mm512_fmadd_ps(mins, _mm512_set1_ps(Act::s(row, c)), acc[i]);
      } else if constexpr (P::kMin == MinKind::KQuant) {
        const __m512 mins = _mm512_loadu_ps(reinterpret_cast<const float*>(ch + 16 * P::C + 64));
        acc[i] = _mm512_fnmadd_ps(mins, _mm512_set1_ps(dx * static_cast<float>(Act::sum(row, c))), acc[i]);
      }
    }
  }
  const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1u);
  for (int i = 0; i < RA; ++i) _mm512_mask_storeu_ps(out + static_cast<size_t>(i) * out_stride, m, acc[i]);
}
#else
// AVX2 (no VNNI): the same chunks, as two halves of 8 rows. maddubs multiplies unsigned weights with
// signed activation bytes into int16 pair sums, which must not saturate: a type's values (at most
// kMax) times an activation (|x| <= 128) let kPairs groups' pair sums add up in int16 before one
// madd widens them to int32. Q8_0's values (q + 128, up to 255) would saturate: they go back to
// signed q, and |q| times x signed by q (ggml's AVX2 trick; |q| <= 128, |x| <= 127) gives q * x.
template <class P>
constexpr int kPairs = P::kMax > 63 ? 1 : 32767 / (2 * 128 * P::kMax);

inline __m256i bcast4_256(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

template <class P, int RA>
inline void packed_rows(int64_t chunks, const std::byte* pk, const std::byte* a, size_t a_stride, float* out,
                        size_t out_stride, int64_t rows) {
  using Act = typename P::Act;
  constexpr int G = P::C / 4;
  constexpr bool kSigned = P::kMax > 127;
  constexpr int S = kPairs<P> < G ? kPairs<P> : G;  // groups summed in int16
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[RA][2];
  for (auto& r : acc) r[0] = r[1] = _mm256_setzero_ps();
  for (int64_t c = 0; c < chunks; ++c) {
    const std::byte* ch = pk + static_cast<size_t>(c) * chunk_bytes<P>();
    __m256i isum[RA][2];
    for (auto& r : isum) r[0] = r[1] = _mm256_setzero_si256();
    for (int g0 = 0; g0 < G; g0 += S) {
      __m256i s16[RA][2];
      for (int g = g0; g < g0 + S && g < G; ++g)
        for (int h = 0; h < 2; ++h) {
          __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ch + g * 64 + 32 * h));
          if constexpr (kSigned) w = _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));
          const __m256i wu = kSigned ? _mm256_abs_epi8(w) : w;
          for (int i = 0; i < RA; ++i) {
            const __m256i x = bcast4_256(Act::qs(a + static_cast<size_t>(i) * a_stride, c) + 4 * g);
            const __m256i p = _mm256_maddubs_epi16(wu, kSigned ? _mm256_sign_epi8(x, w) : x);
            s16[i][h] = g == g0 ? p : _mm256_add_epi16(s16[i][h], p);
          }
        }
      for (int i = 0; i < RA; ++i)
        for (int h = 0; h < 2; ++h)
          isum[i][h] = _mm256_add_epi32(isum[i][h], _mm256_madd_epi16(s16[i][h], ones));
    }
    for (int h = 0; h < 2; ++h) {
      const __m256 scale = _mm256_loadu_ps(reinterpret_cast<const float*>(ch + 16 * P::C) + 8 * h);
      const __m256 mins = P::kMin != MinKind::None
                              ? _mm256_loadu_ps(reinterpret_cast<const float*>(ch + 16 * P::C + 64) + 8 * h)
                              : _mm256_setzero_ps();
      for (int i = 0; i < RA; ++i) {
        const std::byte* row = a + static_cast<size_t>(i) * a_stride;
        __m256i s = isum[i][h];
        if constexpr (P::kOffset != 0 && !kSigned)
          s = _mm256_sub_epi32(s, _mm256_set1_epi32(P::kOffset * Act::sum(row, c)));
        const float dx = Act::d(row, c);
        acc[i][h] =
            _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(scale, _mm256_set1_ps(dx)), acc[i][h]);
        if constexpr (P::kMin == MinKind::Legacy)
          acc[i][h] = _mm256_fmadd_ps(mins, _mm256_set1_ps(Act::s(row, c)), acc[i][h]);
        else if constexpr (P::kMin == MinKind::KQuant)
          acc[i][h] =
              _mm256_fnmadd_ps(mins, _mm256_set1_ps(dx * static_cast<float>(Act::sum(row, c))), acc[i][h]);
      }
    }
  }
  for (int i = 0; i < RA; ++i) {
    float o[kPackRows];
    _mm256_storeu_ps(o, acc[i][0]);
    _mm256_storeu_ps(o + 8, acc[i][1]);
    std::memcpy(out + static_cast<size_t>(i) * out_stride, o, static_cast<size_t>(rows) * sizeof(float));
  }
}
#endif

// out[a * out_stride + r] for the packed rows r < rows and every activation row a < n_a.
template <class P>
void packed_gemm(int64_t k, const std::byte* pk, int64_t rows, const std::byte* a, size_t a_stride,
                 int64_t n_a, float* out, size_t out_stride) {
  const int64_t chunks = k / P::C;
  int64_t i = 0;
  for (; i + kPackActs <= n_a; i += kPackActs)
    packed_rows<P, kPackActs>(chunks, pk, a + static_cast<size_t>(i) * a_stride, a_stride,
                              out + static_cast<size_t>(i) * out_stride, out_stride, rows);
  for (; i < n_a; ++i)
    packed_rows<P, 1>(chunks, pk, a + static_cast<size_t>(i) * a_stride, a_stride,
                      out + static_cast<size_t>(i) * out_stride, out_stride, rows);
}

using PQ4_0 = PackLegacy<q::BlockQ4_0, unpack_q4_0, 8, 15, false>;
using PQ4_1 = PackLegacy<q::BlockQ4_1, unpack_q4_1, 0, 15, true>;
using PQ5_0 = PackLegacy<q::BlockQ5_0, unpack_q5_0, 16, 31, false>;
using PQ5_1 = PackLegacy<q::BlockQ5_1, unpack_q5_1, 0, 31, true>;
using PQ8_0 = PackLegacy<q::BlockQ8_0, unpack_q8_0, 128, 255, false>;
using PQ8_A = PackLegacy<q::BlockQ8_A, unpack_q8_a, 128, 255, true>;
// MXFP4's table values (-12..12) offset to 0..24, so AVX2 adds five groups in int16.
using PMXFP4 = PackLegacy<q::BlockMXFP4, unpack_mxfp4, 12, 24, false>;
// The grid's values offset to 1..241, as Q8_0's are.
using PIQ4_NL = PackLegacy<q::BlockIQ4_NL, unpack_iq4_nl, 128, 255, false>;
using PQ2_K = PackK<q::BlockQ2_K, unpack_q2_k, 16, 0, 3, true>;
using PQ3_K = PackK<q::BlockQ3_K, unpack_q3_k, 16, 4, 7, false>;
using PQ4_K = PackK<q::BlockQ4_K, unpack_q4_k, 32, 0, 15, true>;
using PQ5_K = PackK<q::BlockQ5_K, unpack_q5_k, 32, 0, 31, true>;
using PQ6_K = PackK<q::BlockQ6_K, unpack_q6_k, 16, 32, 63, false>;
using PIQ4_XS = PackK<q::BlockIQ4_XS, unpack_iq4_xs, 32, 128, 255, false>;

}  // namespace
}  // namespace glass::backend::cpu::kernels
