// IQ4_NL and IQ4_XS (layouts in quant_blocks.h): dequantization, bit-exact with ggml's
// dequantize_row_iq4_nl / _iq4_xs (the same float products in the same order), and quantization as
// llama.cpp's quantize_iq4_nl / quantize_iq4_xs without an importance matrix, so that `glass
// quantize` writes llama-quantize's bytes.
//
// Quantization of a super-block (32 weights for IQ4_NL, 256 for IQ4_XS), in sub-blocks of 32:
//   1. each sub-block's scale: the one mapping its largest-magnitude value onto the grid's extreme
//      (-127), refit by weighted least squares (weights x^2) for the levels it rounds to, then 15
//      more candidates (inverse scales (t - 127) / max, t = -7..7) refit alike; the one with the
//      least weighted error is kept;
//   2. IQ4_XS only: the sub-block scales are quantized to 6 signed bits against the largest one
//      (d = -max / 32, stored as f16), and every weight re-rounded to the grid of its stored scale;
//      IQ4_NL stores its one scale as f16 d and re-rounds against it.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/quant_blocks.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace glass::formats::quant {
namespace {

constexpr float kZeroGroup = 1e-15f;  // sub-blocks whose largest magnitude is below this get scale 0
constexpr int kTries = 7;

int nearest(float x) { return static_cast<int>(std::lrint(x)); }

// The grid index whose value is nearest to x (ties to the lower), by bisection over the sorted grid.
uint8_t nearest_level(float x) {
  const int8_t* v = kIq4Values;
  if (x <= static_cast<float>(v[0])) return 0;
  if (x >= static_cast<float>(v[15])) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < static_cast<float>(v[mid]))
      hi = mid;
    else
      lo = mid;
  }
  return static_cast<uint8_t>(x - static_cast<float>(v[hi - 1]) < static_cast<float>(v[hi]) - x ? hi - 1
                                                                                                : hi);
}

// Weighted sums sum w q x and sum w q^2 for the levels that inverse scale `id` rounds x to.
struct Fit {
  float qx = 0, q2 = 0;
};
Fit fit(const float* x, const float* w, float id, uint8_t* levels) {
  Fit f;
  for (int j = 0; j < 32; ++j) {
    const uint8_t l = nearest_level(id * x[j]);
    if (levels != nullptr) levels[j] = l;
    const auto q = static_cast<float>(kIq4Values[l]);
    f.qx += w[j] * q * x[j];
    f.q2 += w[j] * q * q;
  }
  return f;
}

// Step 1 for one sub-block of 32: its best scale (0 for an all-zero sub-block).
float sub_block_scale(const float* x) {
  float w[32];
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    w[j] = x[j] * x[j];
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < kZeroGroup) return 0.0f;
  const auto v0 = static_cast<float>(kIq4Values[0]);
  Fit f = fit(x, w, 1 / (-max / v0), nullptr);
  float d = f.q2 > 0 ? f.qx / f.q2 : 0.0f;
  float best = d * f.qx;
  for (int t = -kTries; t <= kTries; ++t) {
    f = fit(x, w, static_cast<float>(t + kIq4Values[0]) / max, nullptr);
    if (f.q2 > 0 && f.qx * f.qx > best * f.q2) {
      d = f.qx / f.q2;
      best = d * f.qx;
    }
  }
  return d;
}

// Nibbles of 32 levels into 16 bytes: low nibbles weights 0-15, high nibbles 16-31.
void pack_nibbles(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(levels[j] | (levels[j + 16] << 4));
}

}  // namespace

void dequantize_iq4_nl(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += kQK) {
    const auto b = load_block<BlockIQ4_NL>(src, i);
    const float d = load_f16(b.d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4Values[b.qs[j] & 0xf]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4Values[b.qs[j] >> 4]);
    }
  }
}

void dequantize_iq4_xs(const void* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = load_block<BlockIQ4_XS>(src, i);
    const float d = load_f16(b.d);
    for (int ib = 0; ib < kQKK / 32; ++ib, dst += 32) {
      const float dl = d * static_cast<float>(iq4_xs_scale(b, ib));
      const uint8_t* qs = b.qs + 16 * ib;
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kIq4Values[qs[j] & 0xf]);
        dst[j + 16] = dl * static_cast<float>(kIq4Values[qs[j] >> 4]);
      }
    }
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQK) {
    BlockIQ4_NL b{};
    const float d = sub_block_scale(src);
    store_f16(b.d, d);
    const float id = d != 0 ? 1 / d : 0.0f;  // re-rounded against the f32 scale, as llama.cpp does
    uint8_t levels[32];
    for (int j = 0; j < 32; ++j) levels[j] = nearest_level(id * src[j]);
    pack_nibbles(levels, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t n_blocks) {
  constexpr int kSubs = kQKK / 32;
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    BlockIQ4_XS b{};
    float scales[kSubs];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < kSubs; ++ib) {
      scales[ib] = sub_block_scale(src + 32 * ib);
      if (std::fabs(scales[ib]) > amax_scale) {
        amax_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    const float d = -max_scale / 32;  // -0.0 for an all-zero block, as llama.cpp stores it
    store_f16(b.d, d);
    const float id = d != 0 ? 1 / d : 0.0f;
    uint16_t high = 0;
    for (int ib = 0; ib < kSubs; ++ib) {
      int l = nearest(id * scales[ib]);
      l = l < -32 ? -32 : (l > 31 ? 31 : l);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.0f;
      uint8_t levels[32];
      for (int j = 0; j < 32; ++j) levels[j] = nearest_level(idl * src[32 * ib + j]);
      pack_nibbles(levels, b.qs + 16 * ib);
      const auto u = static_cast<unsigned>(l + 32);
      b.scales_l[ib / 2] = static_cast<uint8_t>(b.scales_l[ib / 2] | ((u & 0xf) << (4 * (ib % 2))));
      high = static_cast<uint16_t>(high | ((u >> 4) << (2 * ib)));
    }
    b.scales_h[0] = static_cast<uint8_t>(high & 0xff);
    b.scales_h[1] = static_cast<uint8_t>(high >> 8);
    store_block(dst, i, b);
  }
}

}  // namespace glass::formats::quant
