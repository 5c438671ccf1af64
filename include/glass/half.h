#pragma once
// IEEE binary16 (f16) and bfloat16 (bf16) <-> f32 conversions, bit-exact with ggml's portable
// GGML_FP16_TO_FP32 / GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16: widening is exact; narrowing rounds
// to nearest, ties to even; NaN narrows to a quiet NaN (f16: sign | 0x7e00, bf16: the top 16 bits
// with the quiet bit set), overflow gives infinity, subnormals are kept (never flushed).
// Header-only because quantized kernels call these per element. Public, for programs that write
// model files (glass synth); formats/half.h names them for the modules.
#include <bit>
#include <cstdint>

namespace glass {

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) {
    // inf, or nan with its payload kept and the quiet bit set (as hardware conversion does)
    return std::bit_cast<float>(sign | 0x7f800000u | (man << 13) | (man != 0 ? 0x00400000u : 0u));
  }
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));  // rebias 15 -> 127
  // Zero or subnormal: man * 2^-24 is exact in f32.
  const float mag = static_cast<float>(man) * 0x1.0p-24f;
  return sign ? -mag : mag;
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((w >> 16) & 0x8000u);
  const uint32_t abs = w & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // nan -> canonical quiet nan
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf (65504 is the max)
  if (abs < 0x38800000u) {
    // Result is f16-subnormal (|f| < 2^-14): units of 2^-24, rounded to nearest even. Scaling by
    // 2^24 is exact, and the float -> integer step below rounds half-way cases to even by hand.
    const float scaled = std::bit_cast<float>(abs) * 0x1.0p24f;
    auto q = static_cast<uint32_t>(scaled);  // truncates
    const float rem = scaled - static_cast<float>(q);
    if (rem > 0.5f || (rem == 0.5f && (q & 1u))) ++q;
    return sign | static_cast<uint16_t>(q);  // q == 0x400 is the smallest normal: still correct
  }
  // Normal: rebias the exponent, then round the 13 dropped mantissa bits to nearest even. A carry
  // out of the mantissa bumps the exponent, which is the right answer (up to inf at the top).
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t round = 0x0fffu + ((rebased >> 13) & 1u);
  return sign | static_cast<uint16_t>((rebased + round) >> 13);
}

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t w = std::bit_cast<uint32_t>(f);
  if ((w & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((w >> 16) | 0x40u);  // quiet the nan
  return static_cast<uint16_t>((w + 0x7fffu + ((w >> 16) & 1u)) >> 16);
}

}  // namespace glass
