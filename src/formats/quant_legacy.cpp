// Legacy 32-weight blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, and glass's Q8_A (layouts in quant_blocks.h). The
// float expressions keep ggml's operand order (q * d, then + m) so results are bit-identical.
#include <cstdint>

#include "formats/quant_blocks.h"

// Bit-exactness with ggml's reference needs every multiply and add rounded on its own: no FMA
// contraction (GCC does not contract in ISO C++ mode; clang would, given an FMA target).
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace glass::formats::quant {
namespace {

// The 5th bits of a Q5 block: bit j of the little-endian word belongs to weight j.
uint32_t load_qh(const uint8_t (&qh)[4]) {
  return static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
         (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
}

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = load_f16(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((b.qs[j] & 0x0f) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_mxfp4(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockMXFP4>(src, i);
    const float d = e8m0_to_f32_half(b.e);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(kMxfp4Values[b.qs[j] & 0x0f]) * d;
      dst[j + kQK / 2] = static_cast<float>(kMxfp4Values[b.qs[j] >> 4]) * d;
    }
  }
}

void dequantize_q4_1(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = load_f16(b.d);
    const float m = load_f16(b.m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(b.qs[j] & 0x0f) * d + m;
      dst[j + kQK / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_q5_0(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = load_f16(b.d);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kQK / 2)) & 1u) << 4;
      dst[j] = static_cast<float>(((b.qs[j] & 0x0f) | hi0) - 16) * d;
      dst[j + kQK / 2] = static_cast<float>(((b.qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

void dequantize_q5_1(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = load_f16(b.d);
    const float m = load_f16(b.m);
    const uint32_t qh = load_qh(b.qh);
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + kQK / 2)) & 1u) << 4;
      dst[j] = static_cast<float>((b.qs[j] & 0x0f) | hi0) * d + m;
      dst[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) | hi1) * d + m;
    }
  }
}

void dequantize_q8_0(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = load_f16(b.d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// q * d + m with each operation rounded once: for a block made from MLX's scale s and bias b
// (d = s, q = u - 128, m = b + 128 s, all exact in f32 for bf16 s and b) that is s * u + b rounded
// once, the value MLX's dequantization gives.
void dequantize_q8_a(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockQ8_A>(src, i);
    const float d = load_f32(b.d), m = load_f32(b.m);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b.qs[j]) * d + m;
  }
}

}  // namespace glass::formats::quant
