// Activation converters for matmul. They reproduce llama.cpp's x86 rounding exactly (its AVX2
// quantize_row_q8_0 / q8_1 and quantize_row_q8_K_ref), which is what makes quantized logits agree
// with its references to ~1e-6 rather than ~1e-2:
//   q8_0 / q8_1 (blocks of 32): amax = max |x|, d = amax / 127 (stored as f16), q = round_even(x *
//     (127 / amax)); q8_1 also stores s = f16(d * sum(q)).
//   q8_k (blocks of 256): max = the x of largest |x| (first one), iscale = -127 / max, q =
//     min(127, round_even(iscale * x)), d = 1 / iscale (f32), bsums = sums of 16 quants.
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/matmul.h"
#include "formats/half.h"

namespace glass::backend::cpu::kernels {
namespace {

// Round half to even (the default rounding mode), as _mm256_round_ps(v, _MM_ROUND_NEAREST) and
// ggml's nearest_int do. A library call rather than the 1.5 * 2^23 trick: a compiler allowed to
// contract x * id + 2^23 into one FMA would round the product differently.
inline float round_even(float v) { return std::nearbyint(v); }

inline float f16_round(float v) { return formats::f16_to_f32(formats::f32_to_f16(v)); }

void quantize_q8(const float* x, ActQ8* y, int64_t k, bool with_s) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32, ++y) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const auto q = static_cast<int8_t>(static_cast<int>(round_even(x[j] * id)));
      y->qs[j] = q;
      sum += q;
    }
    y->d = f16_round(d);
    y->s = with_s ? f16_round(d * static_cast<float>(sum)) : 0.0f;
    y->sum = sum;
    y->pad = 0;
  }
}

}  // namespace

size_t act_row_bytes(ActType act, int64_t k) {
  const auto n = static_cast<size_t>(k);
  switch (act) {
    case ActType::F32:
    case ActType::F16:
    case ActType::BF16:
      return n * 4;
    case ActType::Q8_0:
    case ActType::Q8_1:
      return n / 32 * sizeof(ActQ8);
    case ActType::Q8_K:
      return n / 256 * sizeof(ActQ8K);
    case ActType::BF16_BITS:
      return (n + 1) / 2 * 4;
  }
  return 0;
}

void quantize_row_f16(const float* x, void* y, int64_t k) {
  auto* o = static_cast<float*>(y);
  for (int64_t i = 0; i < k; ++i) o[i] = formats::f16_to_f32(formats::f32_to_f16(x[i]));
}

void quantize_row_bf16(const float* x, void* y, int64_t k) {
  auto* o = static_cast<float*>(y);
  for (int64_t i = 0; i < k; ++i) o[i] = formats::bf16_to_f32(formats::f32_to_bf16(x[i]));
}

void quantize_row_q8_0(const float* x, void* y, int64_t k) {
  quantize_q8(x, static_cast<ActQ8*>(y), k, false);
}
void quantize_row_q8_1(const float* x, void* y, int64_t k) {
  quantize_q8(x, static_cast<ActQ8*>(y), k, true);
}

void quantize_row_q8_k(const float* x, void* y, int64_t k) {
  auto* out = static_cast<ActQ8K*>(y);
  for (int64_t b = 0; b < k / 256; ++b, x += 256, ++out) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    std::memset(out, 0, sizeof(ActQ8K));
    if (amax == 0.0f) continue;
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j) {
      const int v = static_cast<int>(round_even(iscale * x[j]));
      out->qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += out->qs[j * 16 + i];
      out->bsums[j] = static_cast<int16_t>(sum);
    }
    out->d = 1.0f / iscale;
  }
}

}  // namespace glass::backend::cpu::kernels
