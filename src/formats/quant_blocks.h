#pragma once
// Byte layouts of ggml's quantized blocks (internal to formats/). Every field is a byte array, so a
// block may sit at any address (a Q4_0 block is 18 bytes: blocks after the first are not 2-byte
// aligned); f16 fields are little-endian and read with load_f16. Each struct's size is the
// on-disk block size, checked against graph::traits().
//
// Legacy blocks hold 32 weights with one scale d (and a min m for the _1 variants):
//   x = d * q (+ m). K-quant super-blocks hold 256 weights as 8 or 16 sub-blocks whose scales
//   (and mins) are themselves quantized against a super-block d (and dmin).
#include <cstdint>
#include <cstring>

#include "formats/half.h"

namespace glass::formats::quant {

constexpr int kQK = 32;    // weights per legacy block
constexpr int kQKK = 256;  // weights per K-quant super-block

// q in 0..15 (low nibbles = weights 0..15, high nibbles = 16..31); x = d * (q - 8).
struct BlockQ4_0 {
  uint8_t d[2];         // f16 scale
  uint8_t qs[kQK / 2];  // 4-bit quants
};
// x = d * q + m, q in 0..15, nibble order as Q4_0.
struct BlockQ4_1 {
  uint8_t d[2];  // f16 scale
  uint8_t m[2];  // f16 min
  uint8_t qs[kQK / 2];
};
// 5-bit q: low 4 bits as Q4_0, bit 4 of weight j is bit j of the little-endian u32 qh; x = d * (q - 16).
struct BlockQ5_0 {
  uint8_t d[2];
  uint8_t qh[4];  // fifth bits
  uint8_t qs[kQK / 2];
};
// x = d * q + m, 5-bit q laid out as Q5_0.
struct BlockQ5_1 {
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// x = d * q, q a signed byte.
struct BlockQ8_0 {
  uint8_t d[2];
  int8_t qs[kQK];
};
// 16 sub-blocks of 16: scales[i] low nibble = scale, high nibble = min (4 bits each);
// x = d * scale * q - dmin * min, q 2 bits. qs byte l of each 32-byte group holds 4 quants at bit
// shifts 0, 2, 4, 6 for four consecutive sub-block pairs.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint8_t d[2];
  uint8_t dmin[2];
};
// 16 sub-blocks of 16: 6-bit signed scales (offset 32) packed in 12 bytes; q = 2 low bits from qs
// (as Q2_K) minus 4 unless its hmask bit is set; x = d * (scale - 32) * q.
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint8_t d[2];
};
// 8 sub-blocks of 32: 6-bit scale and min each, packed in 12 bytes (see scale_min_k4);
// x = d * scale * q - dmin * min, q 4 bits (64-weight groups: low nibbles then high nibbles).
struct BlockQ4_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
// As Q4_K with a fifth bit per weight from qh (bit 2g / 2g+1 for group g's low / high nibbles).
struct BlockQ5_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
// 16 sub-blocks of 16: signed 8-bit scales; 6-bit q = 4 bits from ql + 2 bits from qh, minus 32;
// x = d * scale * q.
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint8_t d[2];
};

// Affine 8-bit (glass's own; MLX's 8-bit weights): x = d * q + m with f32 d and m and a signed
// byte q, i.e. MLX's scale * u + bias with q = u - 128 and m = bias + 128 * scale (the midpoint, so
// the minimum term stays small beside the quant sum). 40 bytes.
struct BlockQ8_A {
  uint8_t d[4];  // f32 scale
  uint8_t m[4];  // f32 offset
  int8_t qs[kQK];
};

static_assert(sizeof(BlockQ8_A) == 40);

// MXFP4 (OCP Microscaling v1.0, ggml's block_mxfp4): value j of 32 is kMxfp4Values[nibble] x
// 2^(e - 128): the table holds twice the E2M1 values (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
// negatives) and the scale half of 2^(e - 127), as ggml keeps them. Nibble order as Q4_0: the low
// nibbles are values 0-15, the high ones 16-31. 17 bytes.
struct BlockMXFP4 {
  uint8_t e;  // E8M0 shared exponent
  uint8_t qs[kQK / 2];
};

static_assert(sizeof(BlockMXFP4) == 17);

inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// 2^(e - 128) (ggml_e8m0_to_fp32_half), exact for every e: e < 2 are f32 denormals.
inline float e8m0_to_f32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// IQ4_NL (ggml's block_iq4_nl): 32 weights, x = d * kIq4Values[nibble], nibble order as Q4_0. The
// table is a non-uniform 4-bit grid (denser near zero, as weights are distributed). 18 bytes.
struct BlockIQ4_NL {
  uint8_t d[2];  // f16 scale
  uint8_t qs[kQK / 2];
};
// IQ4_XS (ggml's block_iq4_xs): 256 weights in 8 sub-blocks of 32, each with a 6-bit signed scale
// ls - 32 (low 4 bits in scales_l, nibble ib % 2 of byte ib / 2; high 2 bits at bit 2 ib of the
// little-endian u16 scales_h); x = d * (ls - 32) * kIq4Values[nibble], each sub-block's 16 bytes of
// nibbles ordered as IQ4_NL's. 136 bytes.
struct BlockIQ4_XS {
  uint8_t d[2];
  uint8_t scales_h[2];
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// Sub-block ib's scale of an IQ4_XS block, ls - 32 in -32..31.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
  const int h = b.scales_h[0] | (b.scales_h[1] << 8);
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((h >> (2 * ib)) & 3) << 4)) - 32;
}

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210);

inline float load_f32(const uint8_t (&b)[4]) {
  float v;
  std::memcpy(&v, b, 4);
  return v;
}
inline void store_f32(uint8_t (&b)[4], float x) { std::memcpy(b, &x, 4); }
inline float load_f16(const uint8_t (&b)[2]) { return f16_to_f32(static_cast<uint16_t>(b[0] | (b[1] << 8))); }
inline void store_f16(uint8_t (&b)[2], float x) {
  const uint16_t h = f32_to_f16(x);
  b[0] = static_cast<uint8_t>(h & 0xff);
  b[1] = static_cast<uint8_t>(h >> 8);
}

// Copies block i out of a packed array: no alignment or aliasing assumptions about the source.
template <class Block>
Block load_block(const void* src, int64_t i) {
  Block b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}
// The inverse: writes block i of a packed array.
template <class Block>
void store_block(void* dst, int64_t i, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

// Each writes n_blocks * block_size floats.
void dequantize_q4_0(const void* src, float* dst, int64_t n_blocks);
void dequantize_mxfp4(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_1(const void* src, float* dst, int64_t n_blocks);
void dequantize_q5_0(const void* src, float* dst, int64_t n_blocks);
void dequantize_q5_1(const void* src, float* dst, int64_t n_blocks);
void dequantize_q8_0(const void* src, float* dst, int64_t n_blocks);
void dequantize_q2_k(const void* src, float* dst, int64_t n_blocks);
void dequantize_q3_k(const void* src, float* dst, int64_t n_blocks);
void dequantize_q4_k(const void* src, float* dst, int64_t n_blocks);
void dequantize_q5_k(const void* src, float* dst, int64_t n_blocks);
void dequantize_q6_k(const void* src, float* dst, int64_t n_blocks);
void dequantize_q8_a(const void* src, float* dst, int64_t n_blocks);
void dequantize_iq4_nl(const void* src, float* dst, int64_t n_blocks);
void dequantize_iq4_xs(const void* src, float* dst, int64_t n_blocks);

// The inverses (quantize_legacy.cpp, quantize_k.cpp): each reads n_blocks * block_size floats,
// which must be finite and within f16 range (quantize_row checks), and writes n_blocks blocks.
void quantize_q4_0(const float* src, void* dst, int64_t n_blocks);
void quantize_q4_1(const float* src, void* dst, int64_t n_blocks);
void quantize_q5_0(const float* src, void* dst, int64_t n_blocks);
void quantize_q5_1(const float* src, void* dst, int64_t n_blocks);
void quantize_q8_0(const float* src, void* dst, int64_t n_blocks);
void quantize_q2_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q3_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q4_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q5_k(const float* src, void* dst, int64_t n_blocks);
void quantize_q6_k(const float* src, void* dst, int64_t n_blocks);
// Q8_A as MLX quantizes a group of 32: d = (max - min) / 255, u = round((x - min) / d).
void quantize_q8_a(const float* src, void* dst, int64_t n_blocks);
// MXFP4 as llama.cpp's quantize_row_mxfp4_ref (quantize_legacy.cpp).
void quantize_mxfp4(const float* src, void* dst, int64_t n_blocks);
// IQ4_NL / IQ4_XS as llama.cpp's quantize_iq4_nl / quantize_iq4_xs without an importance matrix
// (quantize_iq4.cpp).
void quantize_iq4_nl(const float* src, void* dst, int64_t n_blocks);
void quantize_iq4_xs(const float* src, void* dst, int64_t n_blocks);

}  // namespace glass::formats::quant
