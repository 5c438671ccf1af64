// K-quant 256-weight super-blocks: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (layouts in quant_blocks.h). The
// float expressions keep ggml's operand order ((d * scale) * q - dmin * min) so results are
// bit-identical with dequantize_row_q*_K.
#include <cstdint>

#include "formats/quant_blocks.h"

// Bit-exactness with ggml's reference needs every multiply and add rounded on its own: no FMA
// contraction (GCC does not contract in ISO C++ mode; clang would, given an FMA target).
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace glass::formats::quant {
namespace {

// Q4_K/Q5_K: sub-block j's 6-bit scale and min. Bytes 0-3 hold scales 0-3 (low 6 bits) and the top
// 2 bits of scales 4-7; bytes 4-7 likewise for the mins; bytes 8-11 hold the low nibbles of scales
// 4-7 (low half) and mins 4-7 (high half).
void scale_min_k4(int j, const uint8_t (&q)[12], uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = static_cast<uint8_t>((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4));
    min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q3_K: sub-block j's 6-bit scale (0..63, used minus 32). Low 4 bits: bytes 0-7, low nibbles for
// j < 8, high nibbles of bytes 0-7 for j >= 8; high 2 bits: byte 8 + j % 4 at shift 2 * (j / 4).
int scale_q3_k(int j, const uint8_t (&s)[12]) {
  const int low = j < 8 ? (s[j] & 0x0f) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = load_f16(b.d);
    const float dmin = load_f16(b.dmin);
    int is = 0;
    for (int half = 0; half < 2; ++half) {  // 128 weights from 32 bytes of qs each
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // two sub-blocks of 16 per shift
          const uint8_t sc = b.scales[is++];
          const float dl = d * static_cast<float>(sc & 0x0f);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) *dst++ = dl * static_cast<float>((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequantize_q3_k(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = load_f16(b.d);
    int is = 0;
    uint8_t m = 1;  // hmask bit for the current 32-weight row
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * static_cast<float>(scale_q3_k(is++, b.scales) - 32);
          for (int l = 0; l < 16; ++l) {
            const int k = l + 16 * part;
            const int qv = ((q[k] >> shift) & 3) - ((b.hmask[k] & m) ? 0 : 4);
            *dst++ = dl * static_cast<float>(qv);
          }
        }
      }
    }
  }
}

void dequantize_q4_k(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = load_f16(b.d);
    const float dmin = load_f16(b.dmin);
    for (int g = 0; g < 4; ++g) {  // 64 weights per group: 32 low nibbles, then 32 high nibbles
      const uint8_t* q = b.qs + 32 * g;
      uint8_t sc = 0;
      uint8_t mn = 0;
      scale_min_k4(2 * g, b.scales, sc, mn);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(mn);
      scale_min_k4(2 * g + 1, b.scales, sc, mn);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = load_f16(b.d);
    const float dmin = load_f16(b.dmin);
    for (int g = 0; g < 4; ++g) {
      const uint8_t* q = b.qs + 32 * g;
      const auto u1 = static_cast<uint8_t>(1u << (2 * g));
      const auto u2 = static_cast<uint8_t>(2u << (2 * g));
      uint8_t sc = 0;
      uint8_t mn = 0;
      scale_min_k4(2 * g, b.scales, sc, mn);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(mn);
      scale_min_k4(2 * g + 1, b.scales, sc, mn);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(mn);
      for (int l = 0; l < 32; ++l)
        *dst++ = d1 * static_cast<float>((q[l] & 0x0f) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *dst++ = d2 * static_cast<float>((q[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
    }
  }
}

void dequantize_q6_k(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = load_f16(b.d);
    for (int half = 0; half < 2; ++half, dst += 128) {  // 128 weights: 64 bytes of ql, 32 of qh
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

}  // namespace glass::formats::quant
