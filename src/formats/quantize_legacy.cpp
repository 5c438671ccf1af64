// Quantizers for the legacy 32-weight blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (layouts in
// quant_blocks.h). One pass per block, no search: these are the rules llama.cpp's reference
// quantizers (quantize_row_*_ref, also what llama-quantize runs without an importance matrix)
// follow, so files made here carry the same bytes as llama-quantize's. Every multiply and add is
// rounded on its own, in the same order.
//   Q8_0: d = amax / 127, q = round(x / d) (ties away from zero).
//   Q4_0 / Q5_0: d = m / -8 (-16), m the value of largest magnitude, so m itself lands on level 0
//     and the other side gets one level more than it needs; q = trunc(x / d + 8.5) (16.5), clamped.
//   Q4_1 / Q5_1: d = (max - min) / 15 (31), offset min; q = trunc((x - min) / d + 0.5), clamped.
//   MXFP4: e = floor(log2(amax)) - 2 + 127 as an E8M0 exponent (amax lands near the table's 12 =
//     twice E2M1's 6), each value the table entry nearest to it (the first on a tie).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "formats/quant_blocks.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace glass::formats::quant {
namespace {

// The value of largest magnitude (the first one on a tie) and its magnitude.
struct Extreme {
  float value = 0;
  float magnitude = 0;
};
Extreme signed_extreme(const float* x, int n) {
  Extreme e;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > e.magnitude) {
      e.magnitude = std::fabs(x[j]);
      e.value = x[j];
    }
  }
  return e;
}

struct Range {
  float min = FLT_MAX;
  float max = -FLT_MAX;
};
Range range_of(const float* x, int n) {
  Range r;
  for (int j = 0; j < n; ++j) {
    r.min = std::min(r.min, x[j]);
    r.max = std::max(r.max, x[j]);
  }
  return r;
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// The offset grid of a block (Q4_1, Q5_1, Q8_A): levels 0..top from the block's minimum in steps d.
struct OffsetGrid {
  float min, d, inv;
};
OffsetGrid offset_grid(const float* x, int top) {
  const Range r = range_of(x, kQK);
  const float d = (r.max - r.min) / static_cast<float>(top);
  return {r.min, d, inverse_or_zero(d)};
}

// Level of x on a symmetric grid: trunc(x * inv + offset), at most top. The argument is >= 0 by
// construction (|x * inv| <= offset - 0.5), so truncation is rounding to nearest.
int symmetric_level(float x, float inv, float offset, int top) {
  const float scaled = x * inv;
  return std::min(top, static_cast<int>(scaled + offset));
}

int offset_level(float x, float min, float inv, int top) {
  const float scaled = (x - min) * inv;
  return std::min(top, static_cast<int>(scaled + 0.5f));
}

void store_qh(uint8_t (&qh)[4], uint32_t bits) {
  for (int b = 0; b < 4; ++b) qh[b] = static_cast<uint8_t>(bits >> (8 * b));
}

}  // namespace

void quantize_q4_0(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ4_0 b{};
    const float d = signed_extreme(src, kQK).value / -8.0f;
    const float inv = inverse_or_zero(d);
    store_f16(b.d, d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = symmetric_level(src[j], inv, 8.5f, 15);
      const int hi = symmetric_level(src[j + kQK / 2], inv, 8.5f, 15);
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_mxfp4(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockMXFP4 b{};
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(src[j]));
    // llama.cpp's expression in float (log2f, as it calls it: near a power of two the rounding of
    // log2f decides the exponent), truncated to int, then to the byte: an amax below 2^-125 wraps
    // as its cast does on x86.
    const float exponent = amax > 0 ? std::floor(std::log2(amax)) - 2 + 127 : 0.0f;
    b.e = static_cast<uint8_t>(static_cast<int>(exponent));
    const float d = e8m0_to_f32_half(b.e);
    auto nearest = [d](float x) {
      int best = 0;
      float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
      for (int k = 1; k < 16; ++k) {
        const float err = std::fabs(static_cast<float>(kMxfp4Values[k]) * d - x);
        if (err < best_err) {
          best = k;
          best_err = err;
        }
      }
      return best;
    };
    for (int j = 0; j < kQK / 2; ++j)
      b.qs[j] = static_cast<uint8_t>(nearest(src[j]) | (nearest(src[j + kQK / 2]) << 4));
    store_block(dst, i, b);
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ4_1 b{};
    const auto [min, d, inv] = offset_grid(src, 15);
    store_f16(b.d, d);
    store_f16(b.m, min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = offset_level(src[j], min, inv, 15);
      const int hi = offset_level(src[j + kQK / 2], min, inv, 15);
      b.qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_q5_0(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ5_0 b{};
    const float d = signed_extreme(src, kQK).value / -16.0f;
    const float inv = inverse_or_zero(d);
    store_f16(b.d, d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = symmetric_level(src[j], inv, 16.5f, 31);
      const int hi = symmetric_level(src[j + kQK / 2], inv, 16.5f, 31);
      b.qs[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kQK / 2);
    }
    store_qh(b.qh, qh);
    store_block(dst, i, b);
  }
}

void quantize_q5_1(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ5_1 b{};
    const auto [min, d, inv] = offset_grid(src, 31);
    store_f16(b.d, d);
    store_f16(b.m, min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      // ggml leaves this unclamped; 31 is only exceeded through rounding at the top of the range,
      // where a wrap to 0 would be wrong.
      const int lo = offset_level(src[j], min, inv, 31);
      const int hi = offset_level(src[j + kQK / 2], min, inv, 31);
      b.qs[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      qh |= static_cast<uint32_t>(lo >> 4) << j;
      qh |= static_cast<uint32_t>(hi >> 4) << (j + kQK / 2);
    }
    store_qh(b.qh, qh);
    store_block(dst, i, b);
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ8_0 b{};
    const float d = signed_extreme(src, kQK).magnitude / 127.0f;
    const float inv = inverse_or_zero(d);
    store_f16(b.d, d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(std::round(src[j] * inv));
    store_block(dst, i, b);
  }
}

void quantize_q8_a(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockQ8_A b{};
    const auto [min, d, inv] = offset_grid(src, 255);
    store_f32(b.d, d);
    store_f32(b.m, min + 128.0f * d);
    for (int j = 0; j < kQK; ++j) b.qs[j] = static_cast<int8_t>(offset_level(src[j], min, inv, 255) - 128);
    store_block(dst, i, b);
  }
}

}  // namespace glass::formats::quant
