#pragma once
// Row routines of VecOps, written once against vec.h and compiled per ISA by vec_ops_<isa>.cpp.
// Formulas are the ref backend's (backend/ref/composites.cpp); sums use the vector's f32 lanes
// (vec.h's kLanes), summed at the end (the ref sums in double: the difference is far inside the stated
// tolerances).
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/vec.h"
#include "backend/cpu/kernels/vec_ops.h"

namespace glass::backend::cpu::kernels {
namespace {

// RMSNorm (Zhang & Sennrich 2019): y = x * (1 / sqrt(mean(x^2) + eps)) * w. As llama.cpp: squares
// rounded to f32, summed in double, the mean rounded to f32.
void rms_norm_row(const float* x, const float* w, float* y, int64_t n, float eps) {
  f64x8 acc = f64x8{} + 0.0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    f32x8 v;
    std::memcpy(&v, x + i, sizeof(v));
    acc += __builtin_convertvector(v * v, f64x8);
  }
  double sum = 0.0;
  for (int k = 0; k < 8; ++k) sum += acc[k];
  for (; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
  i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, load(x + i) * splat(scale) * load(w + i));
  for (; i < n; ++i) y[i] = x[i] * scale * w[i];
}

// SiLU: x / (1 + e^-x) with the vector e^x, for the tail elements too (through a padded vector, where
// llama.cpp takes libm's): a fused matmul applies it per tile of columns, so which columns are a
// tail depends on the tiling, and an element's value must not (batch invariance).
inline f32v silu_v(f32v g) { return g / (splat(1.0f) + vexp(-g)); }

void swiglu_row(const float* g, const float* u, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, silu_v(load(g + i)) * load(u + i));
  if (i == n) return;
  alignas(64) float tg[kLanes] = {}, tu[kLanes] = {}, ty[kLanes];
  std::memcpy(tg, g + i, static_cast<size_t>(n - i) * sizeof(float));
  std::memcpy(tu, u + i, static_cast<size_t>(n - i) * sizeof(float));
  store(ty, silu_v(load(tg)) * load(tu));
  std::memcpy(y + i, ty, static_cast<size_t>(n - i) * sizeof(float));
}

void silu_row(const float* g, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, silu_v(load(g + i)));
  if (i == n) return;
  alignas(64) float tg[kLanes] = {}, ty[kLanes];
  std::memcpy(tg, g + i, static_cast<size_t>(n - i) * sizeof(float));
  store(ty, silu_v(load(tg)));
  std::memcpy(y + i, ty, static_cast<size_t>(n - i) * sizeof(float));
}

// One row at a time: the row is decayed and read against k in one pass, corrected and read against
// q in the next, while it sits in L1.
void delta_rule(float* m, const float* k, const float* q, const float* v, float decay, float beta, float* o,
                int64_t D, float scale) {
  const int64_t vec_end = D / kLanes * kLanes;
  for (int64_t j = 0; j < D; ++j) {
    float* row = m + j * D;
    f32v acc = splat(0.0f);
    for (int64_t i = 0; i < vec_end; i += kLanes) {
      const f32v r = load(row + i) * splat(decay);
      store(row + i, r);
      acc = fmadd(r, load(k + i), acc);
    }
    float sk = hsum(acc);
    for (int64_t i = vec_end; i < D; ++i) {
      row[i] *= decay;
      sk += row[i] * k[i];
    }
    const float delta = (v[j] - sk) * beta;
    f32v read = splat(0.0f);
    for (int64_t i = 0; i < vec_end; i += kLanes) {
      const f32v r = fmadd(splat(delta), load(k + i), load(row + i));
      store(row + i, r);
      if (o != nullptr) read = fmadd(r, load(q + i), read);
    }
    float dot = hsum(read);
    for (int64_t i = vec_end; i < D; ++i) {
      row[i] += delta * k[i];
      dot += row[i] * (o != nullptr ? q[i] : 0.0f);
    }
    if (o != nullptr) o[j] = dot * scale;
  }
}

void add_row(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, load(a + i) + load(b + i));
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

void mul_row(const float* a, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) store(y + i, load(a + i) * load(b + i));
  for (; i < n; ++i) y[i] = a[i] * b[i];
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
