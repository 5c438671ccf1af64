// Quantizers for the K-quant 256-weight super-blocks: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K (layouts in
// quant_blocks.h). Each super-block is quantized in three steps:
//   1. every sub-block (16 or 32 weights) gets its own best scale (and min) by a small search:
//      a grid of candidate scales, each followed by the closed-form least-squares refit of the
//      scale (and min) for the levels it produced, keeping the candidate with the least weighted
//      error (fit_affine, fit_symmetric), or a coordinate descent over single levels
//      (fit_symmetric_descent, for Q3_K);
//   2. the sub-block scales (and mins) are themselves quantized to 4, 6 or 8 bits against the
//      super-block's largest one, which is stored as f16 d (and dmin);
//   3. every weight is re-rounded to the nearest level of the grid actually stored (the
//      quantized scales), so the stored levels match what the dequantizer will multiply.
// The searches, weights and constants are those of llama.cpp's reference K-quantizers
// (quantize_row_q*_K_ref, what llama-quantize runs without an importance matrix), and the float
// operations happen in the same order, so the bytes agree with llama-quantize's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/quant_blocks.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#endif

namespace glass::formats::quant {
namespace {

// Groups whose largest magnitude is below this are all zero.
constexpr float kZeroGroup = 1e-15f;

// Round to nearest, ties to even (the default rounding mode), as an int.
int nearest(float x) { return static_cast<int>(std::lrint(x)); }
int clamp(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Asymmetric fit x ~= scale * L - neg_min, L in [0, nmax], minimizing sum w * |err|^p (p = 1 when
// use_mad, else 2). The min is never positive (a block of positive values still starts at 0).
// Starting from the plain range grid, tries inverse scales (nmax + rmin + rdelta * k) / range for
// k = 0..nstep; for each, the levels it rounds to get a weighted least-squares refit of scale and
// min (clamped to min <= 0), kept when its error is lower. Writes the levels to L.
struct AffineFit {
  float scale = 0;
  float neg_min = 0;  // the stored min: x = scale * L - neg_min
};
AffineFit fit_affine(int n, int nmax, const float* x, const float* w, uint8_t* L, float rmin, float rdelta,
                     int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = w[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    return {0.0f, -min};
  }
  auto error_of = [&](float scale, float offset, const uint8_t* levels) {
    float err = 0;
    for (int i = 0; i < n; ++i) {
      float diff = scale * static_cast<float>(levels[i]) + offset - x[i];
      diff = use_mad ? std::fabs(diff) : diff * diff;
      err += w[i] * diff;
    }
    return err;
  };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(clamp(nearest(iscale * (x[i] - min)), 0, nmax));
  float best = error_of(scale, min, L);
  uint8_t trial[32];
  for (int k = 0; k <= nstep; ++k) {
    iscale = (rmin + rdelta * static_cast<float>(k) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp(nearest(iscale * (x[i] - min)), 0, nmax);
      trial[i] = static_cast<uint8_t>(l);
      const auto lf = static_cast<float>(l);
      sum_l += w[i] * lf;
      sum_l2 += w[i] * lf * lf;
      sum_xl += w[i] * lf * x[i];
    }
    // Normal equations of the weighted fit x ~= a * l + b.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float err = error_of(this_scale, this_min, trial);
    if (err < best) {
      std::memcpy(L, trial, static_cast<size_t>(n));
      best = err;
      scale = this_scale;
      min = this_min;
    }
  }
  return {scale, -min};
}

// The value of largest magnitude in x[0..n) (first on a tie), or 0 below kZeroGroup.
float signed_extreme(int n, const float* x) {
  float value = 0, magnitude = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > magnitude) {
      magnitude = std::fabs(x[i]);
      value = x[i];
    }
  }
  return magnitude < kZeroGroup ? 0.0f : value;
}

// Symmetric fit x ~= scale * (L - nmax), L in [0, 2 nmax), least squares weighted by x^2 (large
// weights matter most). Tries inverse scales -(nmax + 0.1 k) / extreme for k = -9..9, each with
// its least-squares scale, keeping the one explaining the most of x. Returns the scale.
float fit_symmetric(int n, int nmax, const float* x, int8_t* L) {
  const float extreme = signed_extreme(n, x);
  if (extreme == 0) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  // sum w x l and sum w l^2 for the levels of inverse scale iscale (w = x^2).
  auto sums = [&](float iscale, float& sum_lx, float& sum_l2, bool store) {
    sum_lx = 0;
    sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
      if (store) L[i] = static_cast<int8_t>(l + nmax);
      const auto lf = static_cast<float>(l);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * lf;
      sum_l2 += w * lf * lf;
    }
  };
  float sum_lx = 0, sum_l2 = 0;
  sums(static_cast<float>(-nmax) / extreme, sum_lx, sum_l2, true);
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;  // the explained part of sum w x^2: larger is better
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(k)) / extreme;
    sums(iscale, sum_lx, sum_l2, false);
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      sums(iscale, sum_lx, sum_l2, true);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

// Symmetric fit for Q3_K: levels from the range grid, then up to 5 sweeps of coordinate descent
// that move one level at a time to its best value given the others' least-squares scale (weights
// x^2), keeping a move when it raises the explained part. L in [0, 2 nmax). Returns the scale.
float fit_symmetric_descent(int n, int nmax, const float* x, int8_t* L) {
  const float extreme = signed_extreme(n, x);
  if (extreme == 0) {
    std::fill(L, L + n, int8_t{0});
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / extreme;
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(nearest(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const auto lf = static_cast<float>(l);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * lf;
    sum_l2 += w * lf * lf;
  }
  for (int sweep = 0; sweep < 5; ++sweep) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const auto old = static_cast<float>(L[i]);
      float slx = sum_lx - w * x[i] * old;  // the sums without weight i
      if (!(slx > 0)) continue;
      float sl2 = sum_l2 - w * old * old;
      const int l = clamp(nearest(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == L[i]) continue;
      const auto lf = static_cast<float>(l);
      slx += w * x[i] * lf;
      sl2 += w * lf * lf;
      if (sl2 > 0 && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        L[i] = static_cast<int8_t>(l);
        sum_lx = slx;
        sum_l2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sum_l2 > 0 ? sum_lx / sum_l2 : 0.0f;
}

// 2-bit levels of a 256-weight super-block, 4 per byte: byte l of each 32-byte half holds weights
// l, l + 32, l + 64, l + 96 of that half's 128 (the layout Q2_K and Q3_K share).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int half = 0; half < 2; ++half, L += 128, qs += 32)
    for (int l = 0; l < 32; ++l)
      qs[l] = static_cast<uint8_t>(L[l] | (L[l + 32] << 2) | (L[l + 64] << 4) | (L[l + 96] << 6));
}

// Q4_K/Q5_K: the 6-bit scale and min of sub-block j into the 12 packed bytes (see scale_min_k4 in
// quant_k.cpp for the reading side). `q` must start zeroed.
void pack_scale_min_k4(int j, int scale, int min, uint8_t (&q)[12]) {
  if (j < 4) {
    q[j] = static_cast<uint8_t>(scale);
    q[j + 4] = static_cast<uint8_t>(min);
  } else {
    q[j + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
    q[j - 4] = static_cast<uint8_t>(q[j - 4] | ((scale >> 4) << 6));
    q[j] = static_cast<uint8_t>(q[j] | ((min >> 4) << 6));
  }
}
void unpack_scale_min_k4(int j, const uint8_t (&q)[12], int& scale, int& min) {
  if (j < 4) {
    scale = q[j] & 63;
    min = q[j + 4] & 63;
  } else {
    scale = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
    min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q4_K and Q5_K share everything but the level count and the search: 8 sub-blocks of 32 with
// weights rms(sub-block) + |x|, 6-bit scales and mins. Fills L (levels 0..nmax), d, dmin, scales.
struct K4Fit {
  uint8_t L[kQKK];
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
};
K4Fit fit_k4(const float* x, int nmax, float rmin, int nstep) {
  K4Fit f{};
  float scales[8], mins[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32);
    float w[32];
    for (int l = 0; l < 32; ++l) w[l] = rms + std::fabs(xs[l]);
    const AffineFit a = fit_affine(32, nmax, xs, w, f.L + 32 * j, rmin, 0.1f, nstep, false);
    scales[j] = a.scale;
    mins[j] = a.neg_min;
    max_scale = std::max(max_scale, a.scale);
    max_min = std::max(max_min, a.neg_min);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  for (int j = 0; j < 8; ++j)
    pack_scale_min_k4(j, clamp(nearest(inv_scale * scales[j]), 0, 63),
                      clamp(nearest(inv_min * mins[j]), 0, 63), f.scales);
  store_f16(f.d, max_scale / 63.0f);
  store_f16(f.dmin, max_min / 63.0f);
  const float d = load_f16(f.d), dmin = load_f16(f.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, mn = 0;
    unpack_scale_min_k4(j, f.scales, sc, mn);
    const float dl = d * static_cast<float>(sc);
    if (dl == 0) continue;
    const float ml = dmin * static_cast<float>(mn);
    for (int l = 0; l < 32; ++l)
      f.L[32 * j + l] = static_cast<uint8_t>(clamp(nearest((x[32 * j + l] + ml) / dl), 0, nmax));
  }
  return f;
}

}  // namespace

void quantize_q2_k(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    BlockQ2_K b{};
    uint8_t L[kQKK];
    float scales[16], mins[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      float w[16];
      for (int l = 0; l < 16; ++l) w[l] = std::fabs(src[16 * j + l]);
      const AffineFit a = fit_affine(16, 3, src + 16 * j, w, L + 16 * j, -0.5f, 0.1f, 15, true);
      scales[j] = a.scale;
      mins[j] = a.neg_min;
      max_scale = std::max(max_scale, a.scale);
      max_min = std::max(max_min, a.neg_min);
    }
    // 4-bit sub-block scales (low nibble) and mins (high nibble) against d and dmin.
    if (max_scale > 0) {
      const float iscale = 15.0f / max_scale;
      for (int j = 0; j < 16; ++j)
        b.scales[j] = static_cast<uint8_t>(clamp(nearest(iscale * scales[j]), 0, 15));
      store_f16(b.d, max_scale / 15.0f);
    }
    if (max_min > 0) {
      const float iscale = 15.0f / max_min;
      for (int j = 0; j < 16; ++j)
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | (clamp(nearest(iscale * mins[j]), 0, 15) << 4));
      store_f16(b.dmin, max_min / 15.0f);
    }
    const float d = load_f16(b.d), dmin = load_f16(b.dmin);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scales[j] & 0x0f);
      if (dl == 0) continue;
      const float ml = dmin * static_cast<float>(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<uint8_t>(clamp(nearest((src[16 * j + l] + ml) / dl), 0, 3));
    }
    pack_2bit(L, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    BlockQ3_K b{};
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, max_magnitude = 0;  // the scale of largest magnitude, signed
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric_descent(16, 4, src + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_magnitude) {
        max_magnitude = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    // 6-bit signed scales (offset 32): low nibbles in bytes 0-7, high 2 bits in bytes 8-11.
    if (max_scale != 0) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp(nearest(iscale * scales[j]), -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = static_cast<uint8_t>(l & 0x0f);
        } else {
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0x0f) << 4));
        }
        b.scales[8 + j % 4] = static_cast<uint8_t>(b.scales[8 + j % 4] | ((l >> 4) << (2 * (j / 4))));
      }
      store_f16(b.d, 1 / iscale);
    }
    const float d = load_f16(b.d);
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (b.scales[j] & 0x0f) : (b.scales[j - 8] >> 4);
      const int high = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      const float dl = d * static_cast<float>((low | (high << 4)) - 32);
      if (dl == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(clamp(nearest(src[16 * j + l] / dl), -4, 3) + 4);
    }
    // Level bit 2 goes to hmask: weight k's bit is bit k / 32 of byte k % 32; qs keeps bits 0-1.
    uint8_t low2[kQKK];
    for (int k = 0; k < kQKK; ++k) {
      if (L[k] > 3) b.hmask[k % 32] = static_cast<uint8_t>(b.hmask[k % 32] | (1u << (k / 32)));
      low2[k] = static_cast<uint8_t>(L[k] & 3);
    }
    pack_2bit(low2, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_q4_k(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    const K4Fit f = fit_k4(src, 15, -1.0f, 20);
    BlockQ4_K b{};
    std::memcpy(b.d, f.d, 2);
    std::memcpy(b.dmin, f.dmin, 2);
    std::memcpy(b.scales, f.scales, 12);
    // 64-weight groups: low nibbles hold the first 32, high nibbles the next 32.
    for (int g = 0; g < 4; ++g)
      for (int l = 0; l < 32; ++l)
        b.qs[32 * g + l] = static_cast<uint8_t>(f.L[64 * g + l] | (f.L[64 * g + l + 32] << 4));
    store_block(dst, i, b);
  }
}

void quantize_q5_k(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    const K4Fit f = fit_k4(src, 31, -0.5f, 15);
    BlockQ5_K b{};
    std::memcpy(b.d, f.d, 2);
    std::memcpy(b.dmin, f.dmin, 2);
    std::memcpy(b.scales, f.scales, 12);
    // As Q4_K, with bit 4 of group g's low / high levels in bit 2g / 2g + 1 of qh.
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) {
        const int lo = f.L[64 * g + l], hi = f.L[64 * g + l + 32];
        b.qs[32 * g + l] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
        b.qh[l] = static_cast<uint8_t>(b.qh[l] | ((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_q6_k(const float* src, void* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, src += kQKK) {
    BlockQ6_K b{};
    int8_t L[kQKK];
    float scales[16];
    float max_scale = 0, max_magnitude = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_symmetric(16, 32, src + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_magnitude) {
        max_magnitude = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_magnitude < kZeroGroup) {  // an all-zero block
      store_block(dst, i, b);
      continue;
    }
    // 8-bit signed sub-block scales against d = max_scale / -128.
    const float iscale = -128.0f / max_scale;
    store_f16(b.d, 1 / iscale);
    for (int j = 0; j < 16; ++j)
      b.scales[j] = static_cast<int8_t>(clamp(nearest(iscale * scales[j]), -128, 127));
    const float d = load_f16(b.d);
    for (int j = 0; j < 16; ++j) {
      const float dl = d * static_cast<float>(b.scales[j]);
      if (dl == 0) continue;
      for (int l = 0; l < 16; ++l)
        L[16 * j + l] = static_cast<int8_t>(clamp(nearest(src[16 * j + l] / dl), -32, 31) + 32);
    }
    // Per 128-weight half: ql byte l holds the low nibbles of weights l (low) and l + 64 (high),
    // byte l + 32 those of l + 32 and l + 96; qh byte l their top 2 bits at shifts 0, 2, 4, 6.
    for (int half = 0; half < 2; ++half) {
      const int8_t* q = L + 128 * half;
      uint8_t* ql = b.ql + 64 * half;
      uint8_t* qh = b.qh + 32 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0x0f) | ((q[l + 64] & 0x0f) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0x0f) | ((q[l + 96] & 0x0f) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

}  // namespace glass::formats::quant
