#pragma once
// x86 matmul kernels for every weight type, written once and compiled per ISA tier (matmul_avx2.cpp,
// matmul_avx512.cpp; the latter gets VNNI's dpbusd / dpwssd through x86_simd.h).
//
// Each weight block is unpacked into registers once and multiplied with RA activation rows (RA = 1
// for decode, 4 for prefill tiles), integer sums exact as in ggml's vec_dot_*:
//  * legacy blocks (32): signed quants q and |q|; dot(|q|, sign(x, q)) sums q * x without int16
//    saturation; acc += float(sum) * (d_w * d_x); q4_1 / q5_1 / q8_a add m * s per block (q8_a's
//    d and m are f32: block_float).
//  * k-quants (256): 8 groups of 32 quants with int16 scales per 16 (two halves of a vector);
//    sum_j scale_j * <q, x>_j exact in int32; acc += float(sum) * d_w * d_x; the minimum term
//    dmin_w * d_x * sum_j min_j * bsum_j is subtracted at the end.
//  * f32 / f16 / bf16 weights: matmul_x86_float.h.
#include "backend/cpu/kernels/act_quant_x86.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_f16x16.h"
#include "backend/cpu/kernels/matmul_iq4_nlx16.h"  // AVX-512 VNNI and AVX2
#include "backend/cpu/kernels/matmul_iq4_xs_rows.h"
#include "backend/cpu/kernels/matmul_legacy_x16.h"  // AVX-512 VNNI and AVX2
#include "backend/cpu/kernels/matmul_q4_0x16.h"     // AVX-512 VNNI and AVX2
#include "backend/cpu/kernels/matmul_x86_float.h"
#include "backend/cpu/kernels/matmul_x86_packed.h"
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
#include "backend/cpu/kernels/matmul_iq4_xsx16.h"
#include "backend/cpu/kernels/matmul_q4_kx16.h"
#include "backend/cpu/kernels/matmul_q6_kx16.h"
#include "backend/cpu/kernels/matmul_q8_0x16.h"
#endif
#include "backend/cpu/kernels/unpack.h"
#include "backend/cpu/kernels/x86_simd.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int kRA = 4;  // activation rows per weight-block unpack in prefill tiles

// ---- legacy types ---------------------------------------------------------------------------
struct Q4_0P {
  using Block = q::BlockQ4_0;
  static constexpr bool kSigned = true, kMin = false;
  static __m256i quants(const Block& b) { return _mm256_sub_epi8(nibbles32(b.qs), _mm256_set1_epi8(8)); }
};
struct Q4_1P {
  using Block = q::BlockQ4_1;
  static constexpr bool kSigned = false, kMin = true;
  static __m256i quants(const Block& b) { return nibbles32(b.qs); }
};
struct Q5_0P {
  using Block = q::BlockQ5_0;
  static constexpr bool kSigned = true, kMin = false;
  // A clear fifth bit sets the high nibble to 0xF: (q | 0xF0) as int8 is q - 16.
  static __m256i quants(const Block& b) {
    return _mm256_or_si256(nibbles32(b.qs),
                           _mm256_andnot_si256(bits32(b.qh), _mm256_set1_epi8(static_cast<char>(0xF0))));
  }
};
struct Q5_1P {
  using Block = q::BlockQ5_1;
  static constexpr bool kSigned = false, kMin = true;
  static __m256i quants(const Block& b) {
    return _mm256_or_si256(nibbles32(b.qs), _mm256_and_si256(bits32(b.qh), _mm256_set1_epi8(0x10)));
  }
};
struct Q8_0P {
  using Block = q::BlockQ8_0;
  static constexpr bool kSigned = true, kMin = false;
  static __m256i quants(const Block& b) { return load256(b.qs); }
};
struct Q8_AP {
  using Block = q::BlockQ8_A;
  static constexpr bool kSigned = true, kMin = true;
  static __m256i quants(const Block& b) { return load256(b.qs); }
};
// MXFP4: each nibble indexes ggml's table of doubled E2M1 values (one shuffle), the scale is the
// block's halved power of two (ggml's vec_dot_mxfp4_q8_0).
struct MXFP4P {
  using Block = q::BlockMXFP4;
  static constexpr bool kSigned = true, kMin = false;
  static __m256i quants(const Block& b) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q::kMxfp4Values));
    return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), nibbles32(b.qs));
  }
  static float scale(const Block& b) { return q::e8m0_to_f32_half(b.e); }
};

// IQ4_NL: each nibble indexes llama.cpp's non-linear grid (one shuffle), scale d as Q4_0's.
struct IQ4_NLP {
  using Block = q::BlockIQ4_NL;
  static constexpr bool kSigned = true, kMin = false;
  static __m256i quants(const Block& b) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q::kIq4Values));
    return _mm256_shuffle_epi8(_mm256_set_m128i(table, table), nibbles32(b.qs));
  }
};

// A legacy block's weight scale: its f16 d, or what the type says (MXFP4's exponent).
template <class P>
inline float weight_scale(const typename P::Block& b) {
  if constexpr (requires { P::scale(b); })
    return P::scale(b);
  else
    return block_float(b.d);
}

template <class P, int RA>
inline void legacy_rows(int64_t nb, const typename P::Block* w, const std::byte* a, size_t a_stride,
                        float* out, size_t out_stride) {
  __m256 acc[RA];
  float summ[RA];
  for (int i = 0; i < RA; ++i) {
    acc[i] = _mm256_setzero_ps();
    summ[i] = 0.0f;
  }
  for (int64_t b = 0; b < nb; ++b) {
    const auto& blk = w[b];
    const __m256i q = P::quants(blk);
    const __m256i qa = P::kSigned ? _mm256_abs_epi8(q) : q;
    const float dw = weight_scale<P>(blk);
    for (int i = 0; i < RA; ++i) {
      const ActQ8& x = reinterpret_cast<const ActQ8*>(a + static_cast<size_t>(i) * a_stride)[b];
      const __m256i xq = load256(x.qs);
      const __m256i p = dot_u8s8(qa, P::kSigned ? _mm256_sign_epi8(xq, q) : xq);
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * x.d), acc[i]);
      if constexpr (P::kMin) summ[i] += block_float(blk.m) * x.s;
    }
  }
  for (int i = 0; i < RA; ++i) out[static_cast<size_t>(i) * out_stride] = hsum(acc[i]) + summ[i];
}

// ---- k-quants -------------------------------------------------------------------------------
// How a type's constant terms enter the sum, each exactly as ggml's AVX2 vec_dot does it (same
// integer lanes, same float accumulation), so results track llama.cpp's to the last bits:
//   Lanes8First (q2_k): acc += -dmin * (mins . bsums in 8 lanes), before the quant sum
//   Lanes4 (q4_k): a second 4-lane accumulator of -dmin * (mins . pairwise bsums)
//   Scalar (q5_k): a float sum of -dmin * (mins . bsums)
//   Offset32 (q6_k): unsigned quants; the sum loses 32 * (scales . bsums) in its lanes
enum class Terms { None, Lanes8First, Lanes4, Scalar, Offset32 };

struct KUnpacked {
  __m256i q[8];    // weights 32g .. 32g + 31
  __m256i sc[8];   // int16 scales: lanes 0-7 for weights 32g..+15, 8-15 for 32g+16..+31
  __m256i mins16;  // q2_k: int16 minimum per 16 weights; q6_k: the 16 scales as int16
  __m128i mins8;   // q4_k / q5_k: int16 minimum per 32 weights
  float d, dmin;
};

// sc[g] from 16 int8 scales (one per 16 weights): lanes 0-7 scale 2g, lanes 8-15 scale 2g + 1.
inline void spread_scales(__m128i s8, __m256i* sc) {
  for (int g = 0; g < 8; ++g) {
    const __m128i pick = _mm_set_epi64x(0x0101010101010101ll * (2 * g + 1), 0x0101010101010101ll * (2 * g));
    sc[g] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, pick));
  }
}

// The 8 scales and 8 minimums of q4_k / q5_k (6 bits each, 12 bytes): scales in bytes 0-7,
// minimums in bytes 8-15 (ggml's utmp unpacking).
inline __m128i scales_mins_k4(const uint8_t* packed) {
  uint32_t u[4];
  std::memcpy(u, packed, 12);
  constexpr uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
  u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
  const uint32_t aux = u[1] & kmask1;
  u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
  u[2] = aux;
  u[0] &= kmask1;
  return _mm_set_epi32(static_cast<int>(u[3]), static_cast<int>(u[2]), static_cast<int>(u[1]),
                       static_cast<int>(u[0]));
}

struct Q2_KP {
  using Block = q::BlockQ2_K;
  static constexpr bool kSigned = false;
  static constexpr Terms kTerms = Terms::Lanes8First;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load256(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k) u.q[4 * h + k] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3);
    }
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    spread_scales(_mm_and_si128(raw, _mm_set1_epi8(0x0F)), u.sc);
    u.mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F)));
    u.d = half(b.d);
    u.dmin = half(b.dmin);
  }
};

struct Q3_KP {
  using Block = q::BlockQ3_K;
  static constexpr bool kSigned = true;
  static constexpr Terms kTerms = Terms::None;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    const __m256i hm = load256(b.hmask);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = load256(b.qs + 32 * h);
      for (int k = 0; k < 4; ++k) {
        const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), m3);
        const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + k), one);
        u.q[4 * h + k] = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hb, 2)), four);
      }
    }
    uint32_t aux[4];  // the 12-byte packing of 16 6-bit scales, as unpack_q3_k reads it
    std::memcpy(aux, b.scales, 12);
    const uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
    aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
    aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
    aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
    const __m128i s8 = _mm_set_epi32(static_cast<int>(aux[3]), static_cast<int>(aux[2]),
                                     static_cast<int>(aux[1]), static_cast<int>(aux[0]));
    spread_scales(_mm_sub_epi8(s8, _mm_set1_epi8(32)), u.sc);
    u.d = half(b.d);
    u.dmin = 0.0f;
  }
};

struct Q4_KP {
  using Block = q::BlockQ4_K;
  static constexpr bool kSigned = false;
  static constexpr Terms kTerms = Terms::Lanes4;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int g = 0; g < 4; ++g) {
      const __m256i qs = load256(b.qs + 32 * g);
      u.q[2 * g] = _mm256_and_si256(qs, m4);
      u.q[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(qs, 4), m4);
    }
    scales(b.scales, u);
    u.d = half(b.d);
    u.dmin = half(b.dmin);
  }
  static void scales(const uint8_t* packed, KUnpacked& u) {
    const __m128i sm = scales_mins_k4(packed);
    spread_scales(_mm_unpacklo_epi8(sm, sm), u.sc);  // each 32-weight scale serves two 16s
    u.mins8 = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));
  }
};

// IQ4_XS: 8 groups of 32 grid values (one shuffle per 16 bytes of nibbles), each group's signed
// 6-bit scale serving both its 16s; no minimum.
struct IQ4_XSP {
  using Block = q::BlockIQ4_XS;
  static constexpr bool kSigned = true;
  static constexpr Terms kTerms = Terms::None;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q::kIq4Values));
    const __m256i grid = _mm256_set_m128i(table, table);
    for (int g = 0; g < 8; ++g) u.q[g] = _mm256_shuffle_epi8(grid, nibbles32(b.qs + 16 * g));
    const __m128i s16 = iq4_xs_scales16(b);  // one scale per 32 weights: both 16s of group g
    for (int g = 0; g < 8; ++g) {            // word g in every lane (a shuffle: byte shifts need constants)
      const __m128i pick = _mm_set1_epi16(static_cast<int16_t>(((2 * g + 1) << 8) | (2 * g)));
      u.sc[g] = _mm256_broadcastsi128_si256(_mm_shuffle_epi8(s16, pick));
    }
    u.d = half(b.d);
    u.dmin = 0.0f;
  }
};

struct Q5_KP {
  using Block = q::BlockQ5_K;
  static constexpr bool kSigned = false;
  static constexpr Terms kTerms = Terms::Scalar;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i qh = load256(b.qh);
    for (int g = 0; g < 4; ++g) {
      const __m256i qs = load256(b.qs + 32 * g);
      const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), one), 4);
      const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g + 1), one), 4);
      u.q[2 * g] = _mm256_or_si256(_mm256_and_si256(qs, m4), h0);
      u.q[2 * g + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), m4), h1);
    }
    Q4_KP::scales(b.scales, u);
    u.d = half(b.d);
    u.dmin = half(b.dmin);
  }
};

struct Q6_KP {
  using Block = q::BlockQ6_K;
  static constexpr bool kSigned = false;  // quants 0..63; the -32 comes back through Terms::Offset32
  static constexpr Terms kTerms = Terms::Offset32;
  static void unpack(const Block& b, KUnpacked& u) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      const __m256i l0 = load256(b.ql + 64 * h), l1 = load256(b.ql + 64 * h + 32),
                    qh = load256(b.qh + 32 * h);
      auto hi = [&](int shift) {
        return _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, shift), m3), 4);
      };
      u.q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(l0, m4), hi(0));
      u.q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(l1, m4), hi(2));
      u.q[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), hi(4));
      u.q[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), hi(6));
    }
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
    spread_scales(s8, u.sc);
    u.mins16 = _mm256_cvtepi8_epi16(s8);
    u.d = half(b.d);
    u.dmin = 0.0f;
  }
};

template <class P, int RA>
inline void k_rows(int64_t nb, const typename P::Block* w, const std::byte* a, size_t a_stride, float* out,
                   size_t out_stride) {
  __m256 acc[RA];
  __m128 acc4[RA];
  float summs[RA];
  for (int i = 0; i < RA; ++i) {
    acc[i] = _mm256_setzero_ps();
    acc4[i] = _mm_setzero_ps();
    summs[i] = 0.0f;
  }
  KUnpacked u;
  __m256i qa[8];
  for (int64_t b = 0; b < nb; ++b) {
    if constexpr (RA == 1) prefetch_ahead(w + b, sizeof(typename P::Block));
    P::unpack(w[b], u);
    for (int g = 0; g < 8; ++g) qa[g] = P::kSigned ? _mm256_abs_epi8(u.q[g]) : u.q[g];
    for (int i = 0; i < RA; ++i) {
      const ActQ8K& x = reinterpret_cast<const ActQ8K*>(a + static_cast<size_t>(i) * a_stride)[b];
      const float d = x.d * u.d, dmin = -x.d * u.dmin;
      const __m256i bsums = load256(x.bsums);
      if constexpr (P::kTerms == Terms::Lanes8First)
        acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_madd_epi16(u.mins16, bsums)),
                                 acc[i]);
      if constexpr (P::kTerms == Terms::Lanes4 || P::kTerms == Terms::Scalar) {
        const __m128i q8s = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        const __m128i prod = _mm_madd_epi16(u.mins8, q8s);
        if constexpr (P::kTerms == Terms::Lanes4) {
          acc4[i] = _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(prod), acc4[i]);
        } else {
          const __m128i h = _mm_hadd_epi32(_mm_hadd_epi32(prod, _mm_setzero_si128()), _mm_setzero_si128());
          summs[i] += dmin * static_cast<float>(_mm_cvtsi128_si32(h));
        }
      }
      __m256i isum = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i xq = load256(x.qs + 32 * g);
        const __m256i p = _mm256_maddubs_epi16(qa[g], P::kSigned ? _mm256_sign_epi8(xq, u.q[g]) : xq);
        isum = madd_acc(isum, p, u.sc[g]);
      }
      if constexpr (P::kTerms == Terms::Offset32)
        isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(_mm256_madd_epi16(bsums, u.mins16), 5));
      acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc[i]);
    }
  }
  for (int i = 0; i < RA; ++i) {
    float r = hsum(acc[i]);
    if constexpr (P::kTerms == Terms::Lanes4) {
      __m128 m = _mm_add_ps(acc4[i], _mm_movehl_ps(acc4[i], acc4[i]));
      m = _mm_add_ss(m, _mm_movehdup_ps(m));
      r += _mm_cvtss_f32(m);
    }
    if constexpr (P::kTerms == Terms::Scalar) r += summs[i];
    out[static_cast<size_t>(i) * out_stride] = r;
  }
}

// ---- gemm drivers -----------------------------------------------------------------------------
using RowsFn = void (*)(int64_t, const std::byte*, const std::byte*, size_t, float*, size_t);
// Each weight row against the activation rows: tiles of kWide rows (RowsWide, where given), then of
// kRA (RowsN), then one at a time (Rows1).
template <RowsFn Rows1, RowsFn RowsN, RowsFn RowsWide = nullptr, int kWide = 0>
void gemm(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a, size_t a_stride,
          int64_t n_a, float* out, size_t out_stride) {
  for (int64_t r = 0; r < n_w; ++r) {
    const std::byte* wr = w + static_cast<size_t>(r) * w_stride;
    int64_t i = 0;
    if constexpr (RowsWide != nullptr)
      for (; i + kWide <= n_a; i += kWide)
        RowsWide(k, wr, a + static_cast<size_t>(i) * a_stride, a_stride,
                 out + static_cast<size_t>(i) * out_stride + r, out_stride);
    for (; i + kRA <= n_a; i += kRA)
      RowsN(k, wr, a + static_cast<size_t>(i) * a_stride, a_stride,
            out + static_cast<size_t>(i) * out_stride + r, out_stride);
    for (; i < n_a; ++i)
      Rows1(k, wr, a + static_cast<size_t>(i) * a_stride, a_stride,
            out + static_cast<size_t>(i) * out_stride + r, out_stride);
  }
}

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
// AVX-512: two blocks per instruction; lanes 0-7 accumulate the even blocks, 8-15 the odd ones. Each
// activation row sums in this order whatever RA is, so a row's result never depends on how many rows
// its tile holds (batch invariance for the layouts without a 16-row group: IQ4_NL, MXFP4).
template <class P, int RA>
inline void legacy_rows_512(int64_t nb, const typename P::Block* w, const std::byte* a, size_t a_stride,
                            float* out, size_t out_stride) {
  __m512 acc[RA];
  float summ[RA];
  for (int i = 0; i < RA; ++i) {
    acc[i] = _mm512_setzero_ps();
    summ[i] = 0.0f;
  }
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(P::quants(w[b])), P::quants(w[b + 1]), 1);
    // |q| . (x with q's sign): there is no vpsignb at 512 bits
    const __m512i qa = P::kSigned ? _mm512_abs_epi8(q) : q;
    const __mmask64 negative = P::kSigned ? _mm512_movepi8_mask(q) : 0;
    const float dw0 = weight_scale<P>(w[b]), dw1 = weight_scale<P>(w[b + 1]);
    for (int i = 0; i < RA; ++i) {
      const auto* x = reinterpret_cast<const ActQ8*>(a + static_cast<size_t>(i) * a_stride);
      __m512i xq = _mm512_inserti64x4(_mm512_castsi256_si512(load256(x[b].qs)), load256(x[b + 1].qs), 1);
      if constexpr (P::kSigned) xq = _mm512_mask_sub_epi8(xq, negative, _mm512_setzero_si512(), xq);
      const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qa, xq);
      const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(dw0 * x[b].d), _mm256_set1_ps(dw1 * x[b + 1].d), 1);
      acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, acc[i]);
      if constexpr (P::kMin) summ[i] += block_float(w[b].m) * x[b].s + block_float(w[b + 1].m) * x[b + 1].s;
    }
  }
  for (int i = 0; i < RA; ++i) {
    const std::byte* row = a + static_cast<size_t>(i) * a_stride;
    float r = _mm512_reduce_add_ps(acc[i]) + summ[i];
    if (b < nb) {
      float tail = 0.0f;
      legacy_rows<P, 1>(1, w + b, row + static_cast<size_t>(b) * sizeof(ActQ8), 0, &tail, 0);
      r += tail;
    }
    out[static_cast<size_t>(i) * out_stride] = r;
  }
}
#endif

template <int RA>
void iq4_xs(int64_t k, const std::byte* w, const std::byte* a, size_t a_stride, float* out,
            size_t out_stride) {
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
  iq4_xs_rows_512<RA>(k / 256, reinterpret_cast<const q::BlockIQ4_XS*>(w), a, a_stride, out, out_stride);
#else
  k_rows<IQ4_XSP, RA>(k / 256, reinterpret_cast<const q::BlockIQ4_XS*>(w), a, a_stride, out, out_stride);
#endif
}

template <class P, int RA>
void legacy(int64_t k, const std::byte* w, const std::byte* a, size_t a_stride, float* out,
            size_t out_stride) {
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
  legacy_rows_512<P, RA>(k / 32, reinterpret_cast<const typename P::Block*>(w), a, a_stride, out, out_stride);
#else
  legacy_rows<P, RA>(k / 32, reinterpret_cast<const typename P::Block*>(w), a, a_stride, out, out_stride);
#endif
}
template <class P, int RA>
void kquant(int64_t k, const std::byte* w, const std::byte* a, size_t a_stride, float* out,
            size_t out_stride) {
  k_rows<P, RA>(k / 256, reinterpret_cast<const typename P::Block*>(w), a, a_stride, out, out_stride);
}

template <class P>
constexpr GemmFn kLegacy = gemm<legacy<P, 1>, legacy<P, kRA>>;
// k-quant rows: with AVX-512's 32 registers a block's unpack also serves 8 activation rows at a time
// (a batched decode; a prefill takes the packed path), then 4, then one; each row sums alike in any
// tile. On Zen 4 the Sequential strategy's row-major Q6_K made 1B Q4_K_M's 8-sequence decode 12% slower
// than q6_kx16 with 4-row tiles, and level with it with 8 (docs/performance.md).
#if defined(__AVX512F__)
template <class P>
constexpr GemmFn kKQuant = gemm<kquant<P, 1>, kquant<P, kRA>, kquant<P, 8>, 8>;
#else
template <class P>
constexpr GemmFn kKQuant = gemm<kquant<P, 1>, kquant<P, kRA>>;
#endif

using graph::DType;
// k with the packed prefill path of pack policy P (matmul_x86_packed.h: AVX-512 VNNI or AVX2 code).
template <class P>
constexpr MatmulKernel packed(MatmulKernel k) {
  k.packed_bytes = packed_bytes<P>;
  k.pack = pack<P>;
  k.packed_gemm = packed_gemm<P>;
  return k;
}

// The kernel of a 16-row-group layout L (matmul_x16.h): L's decode and tile walk with the plain
// kernel Tail for rows past the last group, the packed prefill path of pack policy P from L's groups.
template <class L, class P, GemmFn Tail>
constexpr MatmulKernel x16_kernel(DType weight, ActType act, QuantizeFn quantize, const char* layout) {
  return {weight,         act,       quantize, gemm_x16<L, Tail>, packed_bytes<P>, L::pack_group,
          packed_gemm<P>, L::repack, layout,   kGroupRows,        L::unpack_row,   gemv_parts_x16<L>};
}

// The file-layout kernels: every weight type, row-major as the file stores it.
constexpr MatmulKernel kF32 = {DType::F32, ActType::F32, nullptr, float_gemm<F32W>};
constexpr MatmulKernel kF32Sequential = {DType::F32, ActType::F32, nullptr, float_gemm_sequential<F32W>};
constexpr MatmulKernel kF16 = {DType::F16, ActType::F16, quantize_f16_x86, float_gemm<F16W>};
constexpr MatmulKernel kBF16 = {DType::BF16, ActType::BF16, quantize_bf16_x86, float_gemm<BF16W>};
constexpr MatmulKernel kQ4_0 = packed<PQ4_0>({DType::Q4_0, ActType::Q8_0, quantize_q8_0_x86, kLegacy<Q4_0P>});
constexpr MatmulKernel kQ4_1 = packed<PQ4_1>({DType::Q4_1, ActType::Q8_1, quantize_q8_1_x86, kLegacy<Q4_1P>});
constexpr MatmulKernel kQ5_0 = packed<PQ5_0>({DType::Q5_0, ActType::Q8_0, quantize_q8_0_x86, kLegacy<Q5_0P>});
constexpr MatmulKernel kQ5_1 = packed<PQ5_1>({DType::Q5_1, ActType::Q8_1, quantize_q8_1_x86, kLegacy<Q5_1P>});
constexpr MatmulKernel kQ8_0 = packed<PQ8_0>({DType::Q8_0, ActType::Q8_0, quantize_q8_0_x86, kLegacy<Q8_0P>});
constexpr MatmulKernel kQ8_A = packed<PQ8_A>({DType::Q8_A, ActType::Q8_1, quantize_q8_1_x86, kLegacy<Q8_AP>});
constexpr MatmulKernel kMXFP4 =
    packed<PMXFP4>({DType::MXFP4, ActType::Q8_0, quantize_q8_0_x86, kLegacy<MXFP4P>});
constexpr MatmulKernel kIQ4_NL =
    packed<PIQ4_NL>({DType::IQ4_NL, ActType::Q8_0, quantize_q8_0_x86, kLegacy<IQ4_NLP>});
#if defined(__AVX512F__)
constexpr GemmFn kIQ4_XSGemm = gemm<iq4_xs<1>, iq4_xs<kRA>, iq4_xs<8>, 8>;
#else
constexpr GemmFn kIQ4_XSGemm = gemm<iq4_xs<1>, iq4_xs<kRA>>;
#endif
constexpr MatmulKernel kIQ4_XS =
    packed<PIQ4_XS>({DType::IQ4_XS, ActType::Q8_K, quantize_q8_k_x86, kIQ4_XSGemm});
constexpr MatmulKernel kQ2_K = packed<PQ2_K>({DType::Q2_K, ActType::Q8_K, quantize_q8_k_x86, kKQuant<Q2_KP>});
constexpr MatmulKernel kQ3_K = packed<PQ3_K>({DType::Q3_K, ActType::Q8_K, quantize_q8_k_x86, kKQuant<Q3_KP>});
constexpr MatmulKernel kQ4_K = packed<PQ4_K>({DType::Q4_K, ActType::Q8_K, quantize_q8_k_x86, kKQuant<Q4_KP>});
constexpr MatmulKernel kQ5_K = packed<PQ5_K>({DType::Q5_K, ActType::Q8_K, quantize_q8_k_x86, kKQuant<Q5_KP>});
constexpr MatmulKernel kQ6_K = packed<PQ6_K>({DType::Q6_K, ActType::Q8_K, quantize_q8_k_x86, kKQuant<Q6_KP>});

// The repacked layouts. F16 and BF16 in k-major 16-row groups (the repack moves 16-bit elements,
// whatever they hold), walked as gemm_half_x16<W, Sequential> says.
template <class W, bool Sequential>
constexpr MatmulKernel half_x16_kernel(DType weight, ActType act, QuantizeFn quantize, const char* layout) {
  return {weight,  act,         quantize,         gemm_half_x16<W, Sequential>,
          nullptr, nullptr,     nullptr,          repack_f16x16,
          layout,  kF16x16Rows, unpack_row_f16x16};
}
constexpr MatmulKernel kF16x16 =
    half_x16_kernel<F16W, false>(DType::F16, ActType::F16, quantize_f16_x86, "f16x16");
constexpr MatmulKernel kF16x16Sequential =
    half_x16_kernel<F16W, true>(DType::F16, ActType::F16, quantize_f16_x86, "f16x16");
constexpr MatmulKernel kBF16x16 =
    half_x16_kernel<BF16W, false>(DType::BF16, ActType::BF16, quantize_bf16_x86, "bf16x16");
constexpr MatmulKernel kBF16x16Sequential =
    half_x16_kernel<BF16W, true>(DType::BF16, ActType::BF16, quantize_bf16_x86, "bf16x16");
// Q4_0, Q4_1, Q5_0 and Q5_1 in 16-row groups on both tiers (AVX2 and AVX-512 VNNI blocks in
// matmul_q4_0x16.h and matmul_legacy_x16.h). Q8_0's has no AVX2 kernel: written as q4_0x16's, it
// decoded slower than the row-major kernel (1B Q8_0 tg32 25-26 against 32 t/s; without dpbusd a
// block takes as many instructions per weight as a row's, the sign trick included). The k-quant
// layouts have no AVX2 blocks yet.
// Each walked in lockstep (the Spread and Lockstep strategies) or as SequentialWalk's.
constexpr MatmulKernel kQ4_0x16 = x16_kernel<Q4_0x16Layout, PQ4_0, kLegacy<Q4_0P>>(
    DType::Q4_0, ActType::Q8_0, quantize_q8_0_x86, "q4_0x16");
constexpr MatmulKernel kQ4_0x16Sequential = x16_kernel<SequentialWalk<Q4_0x16Layout>, PQ4_0, kLegacy<Q4_0P>>(
    DType::Q4_0, ActType::Q8_0, quantize_q8_0_x86, "q4_0x16");
constexpr MatmulKernel kQ4_1x16 =
    x16_kernel<Q4_1x16, PQ4_1, kLegacy<Q4_1P>>(DType::Q4_1, ActType::Q8_1, quantize_q8_1_x86, "q4_1x16");
constexpr MatmulKernel kQ4_1x16Sequential = x16_kernel<SequentialWalk<Q4_1x16>, PQ4_1, kLegacy<Q4_1P>>(
    DType::Q4_1, ActType::Q8_1, quantize_q8_1_x86, "q4_1x16");
constexpr MatmulKernel kQ5_0x16 =
    x16_kernel<Q5_0x16, PQ5_0, kLegacy<Q5_0P>>(DType::Q5_0, ActType::Q8_0, quantize_q8_0_x86, "q5_0x16");
constexpr MatmulKernel kQ5_0x16Sequential = x16_kernel<SequentialWalk<Q5_0x16>, PQ5_0, kLegacy<Q5_0P>>(
    DType::Q5_0, ActType::Q8_0, quantize_q8_0_x86, "q5_0x16");
constexpr MatmulKernel kQ5_1x16 =
    x16_kernel<Q5_1x16, PQ5_1, kLegacy<Q5_1P>>(DType::Q5_1, ActType::Q8_1, quantize_q8_1_x86, "q5_1x16");
constexpr MatmulKernel kQ5_1x16Sequential = x16_kernel<SequentialWalk<Q5_1x16>, PQ5_1, kLegacy<Q5_1P>>(
    DType::Q5_1, ActType::Q8_1, quantize_q8_1_x86, "q5_1x16");
constexpr MatmulKernel kIQ4_NLx16 = x16_kernel<IQ4_NLx16Layout, PIQ4_NL, kLegacy<IQ4_NLP>>(
    DType::IQ4_NL, ActType::Q8_0, quantize_q8_0_x86, "iq4_nlx16");
constexpr MatmulKernel kIQ4_NLx16Sequential =
    x16_kernel<SequentialWalk<IQ4_NLx16Layout>, PIQ4_NL, kLegacy<IQ4_NLP>>(DType::IQ4_NL, ActType::Q8_0,
                                                                           quantize_q8_0_x86, "iq4_nlx16");
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
constexpr MatmulKernel kQ8_0x16 = x16_kernel<Q8_0x16Layout, PQ8_0, kLegacy<Q8_0P>>(
    DType::Q8_0, ActType::Q8_0, quantize_q8_0_x86, "q8_0x16");
constexpr MatmulKernel kQ8_0x16Sequential = x16_kernel<SequentialWalk<Q8_0x16Layout>, PQ8_0, kLegacy<Q8_0P>>(
    DType::Q8_0, ActType::Q8_0, quantize_q8_0_x86, "q8_0x16");
// A k-quant layout L with its decode walks (DecodeStrategy, isa.h): L's own (one group at a time,
// prefetched), LockstepWalk<L> and, for Q4_K and Q5_K, SequentialWalk<L> (one group at a time, no
// prefetch). On Zen 4 (1B tg64, alternating, 4 rounds) the prefetch-free walk read Q4_K_M 3 rounds in
// 4 and Q5_K_M 4 in 4 faster (+7%), but Q3_K_M 41% and Q2_K 11% slower: those two keep their prefetch.
template <class L, class P, GemmFn Tail>
constexpr MatmulKernel kquant_x16(DType weight, const char* layout) {
  return x16_kernel<L, P, Tail>(weight, ActType::Q8_K, quantize_q8_k_x86, layout);
}
constexpr MatmulKernel kQ2_Kx16 = kquant_x16<Q2_Kx16, PQ2_K, kKQuant<Q2_KP>>(DType::Q2_K, "q2_kx16");
constexpr MatmulKernel kQ2_Kx16Lockstep =
    kquant_x16<LockstepWalk<Q2_Kx16>, PQ2_K, kKQuant<Q2_KP>>(DType::Q2_K, "q2_kx16");
constexpr MatmulKernel kQ3_Kx16 = kquant_x16<Q3_Kx16, PQ3_K, kKQuant<Q3_KP>>(DType::Q3_K, "q3_kx16");
constexpr MatmulKernel kQ3_Kx16Lockstep =
    kquant_x16<LockstepWalk<Q3_Kx16>, PQ3_K, kKQuant<Q3_KP>>(DType::Q3_K, "q3_kx16");
constexpr MatmulKernel kQ4_Kx16 = kquant_x16<Q4_Kx16, PQ4_K, kKQuant<Q4_KP>>(DType::Q4_K, "q4_kx16");
constexpr MatmulKernel kQ4_Kx16Lockstep =
    kquant_x16<LockstepWalk<Q4_Kx16>, PQ4_K, kKQuant<Q4_KP>>(DType::Q4_K, "q4_kx16");
constexpr MatmulKernel kQ4_Kx16Sequential =
    kquant_x16<SequentialWalk<Q4_Kx16>, PQ4_K, kKQuant<Q4_KP>>(DType::Q4_K, "q4_kx16");
constexpr MatmulKernel kIQ4_XSx16 = kquant_x16<IQ4_XSx16, PIQ4_XS, kIQ4_XSGemm>(DType::IQ4_XS, "iq4_xsx16");
constexpr MatmulKernel kIQ4_XSx16Lockstep =
    kquant_x16<LockstepWalk<IQ4_XSx16>, PIQ4_XS, kIQ4_XSGemm>(DType::IQ4_XS, "iq4_xsx16");
constexpr MatmulKernel kIQ4_XSx16Sequential =
    kquant_x16<SequentialWalk<IQ4_XSx16>, PIQ4_XS, kIQ4_XSGemm>(DType::IQ4_XS, "iq4_xsx16");
constexpr MatmulKernel kQ5_Kx16 = kquant_x16<Q5_Kx16, PQ5_K, kKQuant<Q5_KP>>(DType::Q5_K, "q5_kx16");
constexpr MatmulKernel kQ5_Kx16Lockstep =
    kquant_x16<LockstepWalk<Q5_Kx16>, PQ5_K, kKQuant<Q5_KP>>(DType::Q5_K, "q5_kx16");
constexpr MatmulKernel kQ5_Kx16Sequential =
    kquant_x16<SequentialWalk<Q5_Kx16>, PQ5_K, kKQuant<Q5_KP>>(DType::Q5_K, "q5_kx16");
constexpr MatmulKernel kQ6_Kx16 = kquant_x16<Q6_Kx16, PQ6_K, kKQuant<Q6_KP>>(DType::Q6_K, "q6_kx16");
constexpr MatmulKernel kQ6_Kx16Lockstep =
    kquant_x16<LockstepWalk<Q6_Kx16>, PQ6_K, kKQuant<Q6_KP>>(DType::Q6_K, "q6_kx16");
#endif

// This tier's rows of the matmul table (matmul.h).
constexpr MatmulRow kX86Rows[] = {
    // The file's layout.
    {&kF32},
    {&kF16},
    {&kBF16},
    {&kQ4_0},
    {&kQ4_1},
    {&kQ5_0},
    {&kQ5_1},
    {&kQ8_0},
    {&kQ8_A},
    {&kMXFP4},
    {&kIQ4_NL},
    {&kIQ4_XS},
    {&kQ2_K},
    {&kQ3_K},
    {&kQ4_K},
    {&kQ5_K},
    {&kQ6_K},
    // Repacked at load, walked as the machine's decode strategy says.
    {&kF16x16, kSpread | kLockstep},
    {&kF16x16Sequential, kSequential},
    {&kBF16x16, kSpread | kLockstep},
    {&kBF16x16Sequential, kSequential},
    {&kQ4_0x16, kSpread | kLockstep},
    {&kQ4_0x16Sequential, kSequential},
    {&kQ4_1x16, kSpread | kLockstep},
    {&kQ4_1x16Sequential, kSequential},
    {&kQ5_0x16, kSpread | kLockstep},
    {&kQ5_0x16Sequential, kSequential},
    {&kQ5_1x16, kSpread | kLockstep},
    {&kQ5_1x16Sequential, kSequential},
    {&kIQ4_NLx16, kSpread | kLockstep},
    {&kIQ4_NLx16Sequential, kSequential},
#if defined(__AVX512F__) && defined(__AVX512VNNI__)
    {&kQ8_0x16, kSpread | kLockstep},
    {&kQ8_0x16Sequential, kSequential},
    {&kQ2_Kx16, kSpread | kSequential},
    {&kQ2_Kx16Lockstep, kLockstep},
    {&kQ3_Kx16, kSpread | kSequential},
    {&kQ3_Kx16Lockstep, kLockstep},
    {&kQ4_Kx16, kSpread},
    {&kQ4_Kx16Lockstep, kLockstep},
    {&kQ4_Kx16Sequential, kSequential},
    {&kIQ4_XSx16, kSpread},
    {&kIQ4_XSx16Lockstep, kLockstep},
    {&kIQ4_XSx16Sequential, kSequential},
    {&kQ5_Kx16, kSpread},
    {&kQ5_Kx16Lockstep, kLockstep},
    {&kQ5_Kx16Sequential, kSequential},
    {&kQ6_Kx16, kSpread},
    {&kQ6_Kx16Lockstep, kLockstep},
    // The file's layout under a strategy: Sequential keeps Q6_K as the file has it (isa.h; on Zen 4
    // q6_kx16 read 21-23 GB/s where the row-major kernel read 33-36)...
    {&kQ6_K, kSequential},
#endif
    // ... and reads f32 one row at a time.
    {&kF32Sequential, kSequential},
};

std::span<const MatmulRow> x86_rows() { return kX86Rows; }

}  // namespace
}  // namespace glass::backend::cpu::kernels
