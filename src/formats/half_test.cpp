// f16 / bf16 conversions: exact values at the edges (subnormals, overflow, ties, nan). The same
// functions were compared bit for bit with ggml's portable conversions over a dense sweep of all
// f32 bit patterns (step 7) and every f16 pattern when written.
#include "formats/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace glass::formats {
namespace {

float bits(uint32_t w) { return std::bit_cast<float>(w); }

TEST(Half, F16ToF32Values) {
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x7bff), 65504.0f);                              // largest finite
  EXPECT_EQ(f16_to_f32(0x0400), std::ldexp(1.0f, -14));                 // smallest normal
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));                 // smallest subnormal
  EXPECT_EQ(f16_to_f32(0x03ff), 1023 * std::ldexp(1.0f, -24));          // largest subnormal
  EXPECT_EQ(std::bit_cast<uint32_t>(f16_to_f32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(f16_to_f32(0x7e00)));
  // A signalling nan comes back quiet with its payload (as F16C / ggml's portable path give).
  EXPECT_EQ(std::bit_cast<uint32_t>(f16_to_f32(0x7c01)), 0x7fc02000u);
}

TEST(Half, F32ToF16RoundsToNearestEven) {
  EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  // 1 + 2^-11 is half-way between 1 and 1 + 2^-10: ties go to the even mantissa (down here) ...
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // ... and up from an odd one: 1 + 3 * 2^-11 -> 1 + 2^-9.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);  // above the tie
  // Overflow: 65504 is the largest f16; 65520 is the tie with "65536" and rounds to inf.
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  // Subnormal results: units of 2^-24, ties to even.
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);      // tie between 0 and 1 unit -> 0
  EXPECT_EQ(f32_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);  // tie between 1 and 2 units -> 2
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(f32_to_f16(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -30)), 0x0400);  // rounds up into normals
  EXPECT_EQ(f32_to_f16(bits(0x00000001)), 0x0000);                               // f32 subnormal
  // nan -> canonical quiet nan, sign kept.
  EXPECT_EQ(f32_to_f16(bits(0x7f800001)), 0x7e00);
  EXPECT_EQ(f32_to_f16(bits(0xffc00000)), 0xfe00);
}

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // nans canonicalise
    ASSERT_EQ(f32_to_f16(f16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

TEST(Half, Bf16) {
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even (down)
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(f32_to_bf16(bits(0x7f7fffff)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(f32_to_bf16(bits(0x00008000)), 0x0000);  // subnormal tie -> even
  EXPECT_EQ(f32_to_bf16(bits(0x00018000)), 0x0002);  // subnormal tie -> even (up)
  EXPECT_EQ(f32_to_bf16(bits(0x80010000)), 0x8001);  // subnormals are kept, not flushed
  EXPECT_EQ(f32_to_bf16(bits(0x7f800001)), 0x7fc0);  // signalling nan -> quiet
  EXPECT_EQ(f32_to_bf16(bits(0xffc12345)), 0xffc1);  // quiet nan keeps its top payload bits
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0) continue;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace glass::formats
