#pragma once
// Weight blocks unpacked to small signed integers plus integer sub-block scales, the form every
// quantized dot product reduces to (formats/quant_blocks.h documents the packed layouts):
//   legacy (32 weights):  x = d * q (+ m)             q: int8 with the type's offset applied
//   k-quants (256):       x = d * scale[j] * q - dmin * min[j]   for sub-block j of 16 weights
// Internal-linkage helpers (anonymous namespace): this header is included by per-ISA files, and
// nothing in it may become one shared out-of-line copy compiled for a wider ISA.
#include <cstdint>
#include <cstring>

#include "formats/quant_blocks.h"

namespace glass::backend::cpu::kernels {
namespace {

namespace q = formats::quant;

inline uint16_t f16_bits(const uint8_t (&b)[2]) { return static_cast<uint16_t>(b[0] | (b[1] << 8)); }

// Legacy blocks: the 32 quants with their offsets applied (q4_0: q - 8, q5_0: q - 16).
inline void unpack_q4_0(const q::BlockQ4_0& b, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>((b.qs[j] & 0x0F) - 8);
    out[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) - 8);
  }
}
inline void unpack_mxfp4(const q::BlockMXFP4& b, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = q::kMxfp4Values[b.qs[j] & 0x0F];
    out[j + 16] = q::kMxfp4Values[b.qs[j] >> 4];
  }
}
inline void unpack_iq4_nl(const q::BlockIQ4_NL& b, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = q::kIq4Values[b.qs[j] & 0x0F];
    out[j + 16] = q::kIq4Values[b.qs[j] >> 4];
  }
}
inline void unpack_q4_1(const q::BlockQ4_1& b, int8_t* out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>(b.qs[j] & 0x0F);
    out[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
  }
}
// Q8_A: q is stored with its offset applied (u - 128).
inline void unpack_q8_a(const q::BlockQ8_A& b, int8_t* out) { std::memcpy(out, b.qs, 32); }
inline uint32_t qh_bits(const uint8_t (&qh)[4]) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}
inline void unpack_q5_0(const q::BlockQ5_0& b, int8_t* out) {
  const uint32_t qh = qh_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>(((b.qs[j] & 0x0F) | (((qh >> j) & 1u) << 4)) - 16);
    out[j + 16] = static_cast<int8_t>(((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16);
  }
}
inline void unpack_q5_1(const q::BlockQ5_1& b, int8_t* out) {
  const uint32_t qh = qh_bits(b.qh);
  for (int j = 0; j < 16; ++j) {
    out[j] = static_cast<int8_t>((b.qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
    out[j + 16] = static_cast<int8_t>((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
  }
}

// K-quant super-blocks, with d and dmin still as f16 bits (converted by the caller's ISA).
struct KBlock {
  int8_t q[256];
  int16_t scale[16];  // per 16 weights
  int16_t min[16];    // per 16 weights (0 for the types without minimums)
  uint16_t d, dmin;
};

inline void unpack_q2_k(const q::BlockQ2_K& b, KBlock& o) {
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = static_cast<int16_t>(b.scales[j] & 0x0F);
    o.min[j] = static_cast<int16_t>(b.scales[j] >> 4);
  }
  for (int half = 0; half < 2; ++half)  // 128 weights per 32 bytes of qs
    for (int shift = 0; shift < 4; ++shift)
      for (int l = 0; l < 32; ++l)
        o.q[half * 128 + shift * 32 + l] = static_cast<int8_t>((b.qs[half * 32 + l] >> (2 * shift)) & 3);
  o.d = f16_bits(b.d);
  o.dmin = f16_bits(b.dmin);
}

// IQ4_XS as a k-quant without minimums: 8 sub-blocks of 32 (each scale serves two 16s), the grid's
// values as the quants.
inline void unpack_iq4_xs(const q::BlockIQ4_XS& b, KBlock& o) {
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = static_cast<int16_t>(q::iq4_xs_scale(b, j / 2));
    o.min[j] = 0;
  }
  for (int g = 0; g < 8; ++g)
    for (int l = 0; l < 16; ++l) {
      o.q[g * 32 + l] = q::kIq4Values[b.qs[g * 16 + l] & 0x0F];
      o.q[g * 32 + 16 + l] = q::kIq4Values[b.qs[g * 16 + l] >> 4];
    }
  o.d = f16_bits(b.d);
  o.dmin = 0;
}

inline void unpack_q3_k(const q::BlockQ3_K& b, KBlock& o) {
  uint32_t aux[4];
  std::memcpy(aux, b.scales, 12);
  const uint32_t tmp = aux[2];
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  uint8_t sc[16];
  std::memcpy(sc, aux, 16);
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = static_cast<int16_t>(sc[j] - 32);
    o.min[j] = 0;
  }
  for (int g = 0; g < 8; ++g) {  // 32-weight groups: 2 bits from qs, the high bit g of hmask
    const int half = g / 4, shift = 2 * (g % 4);
    for (int l = 0; l < 32; ++l) {
      const int lo = (b.qs[half * 32 + l] >> shift) & 3;
      o.q[g * 32 + l] = static_cast<int8_t>(lo - ((b.hmask[l] >> g) & 1 ? 0 : 4));
    }
  }
  o.d = f16_bits(b.d);
  o.dmin = 0;
}

// The 6-bit scales and mins of q4_k / q5_k (ggml's get_scale_min_k4), 8 of each.
inline void scale_min_k4(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      sc[j] = s[j] & 63;
      mn[j] = s[j + 4] & 63;
    } else {
      sc[j] = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
      mn[j] = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
  }
}

inline void unpack_q4_k(const q::BlockQ4_K& b, KBlock& o) {
  uint8_t sc[8], mn[8];
  scale_min_k4(b.scales, sc, mn);
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = sc[j / 2];
    o.min[j] = mn[j / 2];
  }
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      o.q[g * 64 + l] = static_cast<int8_t>(b.qs[g * 32 + l] & 0x0F);
      o.q[g * 64 + 32 + l] = static_cast<int8_t>(b.qs[g * 32 + l] >> 4);
    }
  o.d = f16_bits(b.d);
  o.dmin = f16_bits(b.dmin);
}

inline void unpack_q5_k(const q::BlockQ5_K& b, KBlock& o) {
  uint8_t sc[8], mn[8];
  scale_min_k4(b.scales, sc, mn);
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = sc[j / 2];
    o.min[j] = mn[j / 2];
  }
  for (int g = 0; g < 4; ++g)
    for (int l = 0; l < 32; ++l) {
      const int hi0 = (b.qh[l] >> (2 * g)) & 1, hi1 = (b.qh[l] >> (2 * g + 1)) & 1;
      o.q[g * 64 + l] = static_cast<int8_t>((b.qs[g * 32 + l] & 0x0F) | (hi0 << 4));
      o.q[g * 64 + 32 + l] = static_cast<int8_t>((b.qs[g * 32 + l] >> 4) | (hi1 << 4));
    }
  o.d = f16_bits(b.d);
  o.dmin = f16_bits(b.dmin);
}

inline void unpack_q6_k(const q::BlockQ6_K& b, KBlock& o) {
  for (int j = 0; j < 16; ++j) {
    o.scale[j] = b.scales[j];
    o.min[j] = 0;
  }
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + half * 64;
    const uint8_t* qh = b.qh + half * 32;
    int8_t* out = o.q + half * 128;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
  o.d = f16_bits(b.d);
  o.dmin = 0;
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
