// Hand-built blocks: known bits -> known values for every block type. The expected values restate
// each layout element by element (which byte and bit holds weight e), independently of the
// dequantizers' loop structure. All values chosen are exact in f32, so EXPECT_EQ is fair.
#include "formats/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "formats/quant_blocks.h"

namespace glass::formats {
namespace {

using graph::DType;
using quant::BlockQ2_K;
using quant::BlockQ3_K;
using quant::BlockQ4_0;
using quant::BlockQ4_1;
using quant::BlockQ4_K;
using quant::BlockQ5_0;
using quant::BlockQ5_1;
using quant::BlockQ5_K;
using quant::BlockQ6_K;
using quant::BlockQ8_0;

void set_f16(uint8_t (&b)[2], float v) {
  const uint16_t h = f32_to_f16(v);
  b[0] = static_cast<uint8_t>(h & 0xff);
  b[1] = static_cast<uint8_t>(h >> 8);
}

template <class Block>
std::vector<float> run(DType type, const Block& b, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -999.0f);
  const Status s = dequantize_row(type, &b, out.data(), n);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

TEST(Quant, Q4_0) {
  BlockQ4_0 b{};
  set_f16(b.d, 0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = run(DType::Q4_0, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int q =
        e < 16 ? e : 15 - (e - 16);  // weight e < 16: low nibble of qs[e]; else high nibble of qs[e - 16]
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(q - 8)) << e;
  }
}

TEST(Quant, Q4_1) {
  BlockQ4_1 b{};
  set_f16(b.d, 0.25f);
  set_f16(b.m, -1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((j * 5) & 15) | (((j * 3) & 15) << 4));
  const auto y = run(DType::Q4_1, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int q = e < 16 ? (e * 5) & 15 : ((e - 16) * 3) & 15;
    EXPECT_EQ(y[e], 0.25f * static_cast<float>(q) - 1.0f) << e;
  }
}

TEST(Quant, Q5_0) {
  BlockQ5_0 b{};
  set_f16(b.d, 2.0f);
  const uint32_t qh = 0xa5c3f00fu;  // bit e = fifth bit of weight e
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((j * 7) & 15) | ((j & 15) << 4));
  const auto y = run(DType::Q5_0, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int low = e < 16 ? (e * 7) & 15 : (e - 16);
    const int q = low | static_cast<int>(((qh >> e) & 1u) << 4);
    EXPECT_EQ(y[e], 2.0f * static_cast<float>(q - 16)) << e;
  }
}

TEST(Quant, Q5_1) {
  BlockQ5_1 b{};
  set_f16(b.d, 0.125f);
  set_f16(b.m, 3.0f);
  const uint32_t qh = 0x0ff01234u;
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((15 - j) | (((j * 11) & 15) << 4));
  const auto y = run(DType::Q5_1, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int low = e < 16 ? 15 - e : ((e - 16) * 11) & 15;
    const int q = low | static_cast<int>(((qh >> e) & 1u) << 4);
    EXPECT_EQ(y[e], 0.125f * static_cast<float>(q) + 3.0f) << e;
  }
}

TEST(Quant, Q8_0) {
  BlockQ8_0 b{};
  set_f16(b.d, 0.5f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  const auto y = run(DType::Q8_0, b, 32);
  EXPECT_EQ(y[0], -64.0f);
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[31], 0.5f * 120);
}

// Q2_K: weight e is sub-block e / 16; its 2 bits sit in qs[32 * (e / 128) + e % 32] at shift
// 2 * ((e % 128) / 32).
TEST(Quant, Q2_K) {
  BlockQ2_K b{};
  set_f16(b.d, 1.0f);
  set_f16(b.dmin, 2.0f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<uint8_t>(s | (((s + 3) & 15) << 4));
  for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 29 + 7);
  const auto y = run(DType::Q2_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 16;
    const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    EXPECT_EQ(y[e], static_cast<float>(s * q) - 2.0f * static_cast<float>((s + 3) & 15)) << e;
  }
}

// Q3_K: sub-block j's 6-bit scale: low 4 bits in byte j (j < 8) or the high nibble of byte j - 8,
// high 2 bits in byte 8 + j % 4 at shift 2 * (j / 4). Weight e's 2 low bits as Q2_K; its hmask bit
// is bit (e / 32) of hmask[e % 32], and a clear bit subtracts 4.
TEST(Quant, Q3_K) {
  int scale[16];
  for (int j = 0; j < 16; ++j) scale[j] = 8 + 3 * j;  // 8..53, using all 6 bits
  BlockQ3_K b{};
  for (int j = 0; j < 16; ++j) {
    if (j < 8)
      b.scales[j] |= static_cast<uint8_t>(scale[j] & 15);
    else
      b.scales[j - 8] |= static_cast<uint8_t>((scale[j] & 15) << 4);
    b.scales[8 + j % 4] |= static_cast<uint8_t>((scale[j] >> 4) << (2 * (j / 4)));
  }
  set_f16(b.d, 0.5f);
  for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 13 + 5);
  for (int k = 0; k < 32; ++k) b.hmask[k] = static_cast<uint8_t>(k * 41 + 3);
  const auto y = run(DType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
    const int q = low - (high ? 0 : 4);
    EXPECT_EQ(y[e], 0.5f * static_cast<float>((scale[e / 16] - 32) * q)) << e;
  }
}

// Q4_K / Q5_K scales: sub-block j < 4: scale = bytes[j] & 63, min = bytes[j + 4] & 63; j >= 4:
// low nibbles in bytes[j + 4] (scale low, min high), top 2 bits in the top of bytes[j - 4] (scale)
// and bytes[j] (min).
void pack_k4_scales(uint8_t (&q)[12], const int (&sc)[8], const int (&mn)[8]) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      q[j] |= static_cast<uint8_t>(sc[j]);
      q[j + 4] |= static_cast<uint8_t>(mn[j]);
    } else {
      q[j + 4] = static_cast<uint8_t>((sc[j] & 15) | ((mn[j] & 15) << 4));
      q[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      q[j] |= static_cast<uint8_t>((mn[j] >> 4) << 6);
    }
  }
}

// Q4_K: weight e is sub-block e / 32; its nibble is in qs[32 * (e / 64) + e % 32], low nibble when
// e % 64 < 32, else high.
TEST(Quant, Q4_K) {
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 5 + 7 * j;   // 5..54
    mn[j] = 60 - 5 * j;  // 60..25
  }
  BlockQ4_K b{};
  pack_k4_scales(b.scales, sc, mn);
  set_f16(b.d, 0.5f);
  set_f16(b.dmin, 0.25f);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>((k % 16) | (((k * 7) % 16) << 4));
  const auto y = run(DType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
    const int q = e % 64 < 32 ? byte & 15 : byte >> 4;
    EXPECT_EQ(y[e], 0.5f * static_cast<float>(sc[e / 32] * q) - 0.25f * static_cast<float>(mn[e / 32])) << e;
  }
}

// Q5_K: as Q4_K plus a fifth bit: bit 2 * (e / 64) + (e % 64 >= 32) of qh[e % 32].
TEST(Quant, Q5_K) {
  int sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = 63 - 6 * j;
    mn[j] = 2 + 8 * j;
  }
  BlockQ5_K b{};
  pack_k4_scales(b.scales, sc, mn);
  set_f16(b.d, 0.25f);
  set_f16(b.dmin, 0.5f);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>(k * 23 + 1);
  for (int k = 0; k < 32; ++k) b.qh[k] = static_cast<uint8_t>(k * 37 + 11);
  const auto y = run(DType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
    const bool upper = e % 64 >= 32;
    const int high = (b.qh[e % 32] >> (2 * (e / 64) + (upper ? 1 : 0))) & 1;
    const int q = (upper ? byte >> 4 : byte & 15) + 16 * high;
    EXPECT_EQ(y[e], 0.25f * static_cast<float>(sc[e / 32] * q) - 0.5f * static_cast<float>(mn[e / 32])) << e;
  }
}

// Q6_K: weight e: half h = e / 128, quarter c = (e % 128) / 32, l = e % 32. Low 4 bits:
// ql[64h + 32(c % 2) + l], low nibble for c < 2, else high; top 2 bits: qh[32h + l] at shift 2c;
// q = that - 32; scale = scales[e / 16].
TEST(Quant, Q6_K) {
  BlockQ6_K b{};
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<int8_t>(s * 15 - 120);
  set_f16(b.d, 0.125f);
  for (int k = 0; k < 128; ++k) b.ql[k] = static_cast<uint8_t>(k * 53 + 9);
  for (int k = 0; k < 64; ++k) b.qh[k] = static_cast<uint8_t>(k * 19 + 200);
  const auto y = run(DType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, c = (e % 128) / 32, l = e % 32;
    const uint8_t lo_byte = b.ql[64 * h + 32 * (c % 2) + l];
    const int lo = c < 2 ? lo_byte & 15 : lo_byte >> 4;
    const int hi = (b.qh[32 * h + l] >> (2 * c)) & 3;
    const int q = (lo | (hi << 4)) - 32;
    EXPECT_EQ(y[e], 0.125f * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q)) << e;
  }
}

TEST(Quant, PlainTypes) {
  const float f[3] = {1.5f, -2.0f, 3.25f};
  std::vector<float> y(3);
  ASSERT_TRUE(dequantize_row(DType::F32, f, y.data(), 3).ok());
  EXPECT_EQ(y, std::vector<float>(f, f + 3));
  const uint8_t h[6] = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00};  // f16 1, -2, 2^-24 (little-endian)
  ASSERT_TRUE(dequantize_row(DType::F16, h, y.data(), 3).ok());
  EXPECT_EQ(y, (std::vector<float>{1.0f, -2.0f, 5.9604644775390625e-08f}));
  const uint8_t bf[6] = {0x80, 0x3f, 0x40, 0xc0, 0x00, 0x00};  // bf16 1, -3, 0
  ASSERT_TRUE(dequantize_row(DType::BF16, bf, y.data(), 3).ok());
  EXPECT_EQ(y, (std::vector<float>{1.0f, -3.0f, 0.0f}));
}

TEST(Quant, MultipleBlocksAndUnalignedSource) {
  // Two Q4_0 blocks starting at an odd address: block 1's f16 scale is not 2-byte aligned.
  std::vector<uint8_t> buf(1 + 2 * sizeof(BlockQ4_0));
  BlockQ4_0 b0{}, b1{};
  set_f16(b0.d, 1.0f);
  set_f16(b1.d, -1.0f);
  std::memset(b0.qs, 0x99, 16);  // q = 9 -> +1
  std::memset(b1.qs, 0x00, 16);  // q = 0 -> -8 * -1 = 8
  std::memcpy(buf.data() + 1, &b0, sizeof b0);
  std::memcpy(buf.data() + 1 + sizeof b0, &b1, sizeof b1);
  std::vector<float> y(64);
  ASSERT_TRUE(dequantize_row(DType::Q4_0, buf.data() + 1, y.data(), 64).ok());
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[31], 1.0f);
  EXPECT_EQ(y[32], 8.0f);
  EXPECT_EQ(y[63], 8.0f);
}

TEST(Quant, Errors) {
  std::vector<float> y(64, 7.0f);
  std::vector<uint8_t> src(1024);
  Status s = dequantize_row(DType::Q4_0, src.data(), y.data(), 33);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(s.error().message.find("q4_0"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("33"), std::string::npos) << s.error().message;
  EXPECT_EQ(y[0], 7.0f);  // untouched
  s = dequantize_row(DType::Q6_K, src.data(), y.data(), 128);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("256"), std::string::npos) << s.error().message;
  s = dequantize_row(DType::F32, src.data(), y.data(), -1);
  EXPECT_FALSE(s.ok());
  s = dequantize_row(DType::I32, src.data(), y.data(), 4);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::Unsupported);
  EXPECT_NE(s.error().message.find("i32"), std::string::npos) << s.error().message;
  EXPECT_TRUE(dequantize_row(DType::Q8_0, src.data(), y.data(), 0).ok());
}

// MXFP4 (OCP Microscaling v1.0): E2M1 nibbles 0-7 are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and 8-15 their
// negatives, all times 2^(e - 127); low nibbles are elements 0-15, high nibbles 16-31.
TEST(Dequantize, Mxfp4) {
  const float e2m1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (const int e : {127, 130, 100, 1, 0, 254}) {
    quant::BlockMXFP4 b{};
    b.e = static_cast<uint8_t>(e);
    for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    const auto out = run(DType::MXFP4, b, 32);
    const float scale = std::ldexp(1.0f, e - 127);
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(out[static_cast<size_t>(j)], e2m1[j] * scale) << "e " << e << " element " << j;
      EXPECT_EQ(out[static_cast<size_t>(j + 16)], e2m1[15 - j] * scale) << "e " << e << " element " << j + 16;
    }
  }
}

}  // namespace
}  // namespace glass::formats
