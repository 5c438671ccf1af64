// MLX triplets made here by MLX's packing rule (values 32 / bits to a little-endian uint32, the first
// in the lowest bits; bf16 scales and biases per group) convert to blocks that dequantize to
// scale * u + bias exactly, rounded once as MLX's own dequantization rounds it.
#include "models/hf_mlx.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "formats/quant.h"
#include "glass/half.h"

namespace glass::models {
namespace {

struct MlxMatrix {
  std::vector<uint32_t> words;
  std::vector<uint16_t> scales, biases;  // bf16
  std::vector<float> values;             // scale * u + bias, as MLX dequantizes
  formats::SafetensorsTensor w, s, b;
};

// rows x cols random quants; each group's scale is `scale` times a random factor in [1, 2).
MlxMatrix make(int64_t rows, int64_t cols, int64_t group, int bits, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  const uint32_t top = (1u << bits) - 1;
  std::uniform_int_distribution<uint32_t> quant(0, top);
  std::uniform_real_distribution<float> factor(1.0f, 2.0f), offset(-1.0f, 1.0f);
  MlxMatrix m;
  const int64_t groups = cols / group, per_word = 32 / bits;
  m.words.assign(static_cast<size_t>(rows * cols / per_word), 0);
  for (int64_t i = 0; i < rows * groups; ++i) {
    const float sc = scale * factor(rng);
    m.scales.push_back(f32_to_bf16(sc));
    m.biases.push_back(f32_to_bf16(-0.5f * static_cast<float>(top) * sc + sc * offset(rng)));
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t u = quant(rng);
      const int64_t e = r * cols + c;
      m.words[static_cast<size_t>(e / per_word)] |= u << (bits * (e % per_word));
      const size_t g = static_cast<size_t>(r * groups + c / group);
      m.values.push_back(bf16_to_f32(m.scales[g]) * static_cast<float>(u) + bf16_to_f32(m.biases[g]));
    }
  m.w = {.name = "layer.proj.weight",
         .dtype = "U32",
         .graph_dtype = {},
         .shape = {rows, cols / per_word},
         .offset = 0,
         .nbytes = m.words.size() * 4,
         .data = m.words.data()};
  m.s = {.name = "layer.proj.scales",
         .dtype = "BF16",
         .graph_dtype = graph::DType::BF16,
         .shape = {rows, groups},
         .offset = 0,
         .nbytes = m.scales.size() * 2,
         .data = m.scales.data()};
  m.b = m.s;
  m.b.name = "layer.proj.biases";
  m.b.data = m.biases.data();
  return m;
}

// The converted weight of m, or the error.
Result<formats::SafetensorsTensor> convert(const MlxMatrix& m, int64_t group, int bits,
                                           HfOwnedTensors& owned) {
  const SafetensorsTensors in{{m.w.name, &m.w}, {m.s.name, &m.s}, {m.b.name, &m.b}};
  formats::MlxQuantization q{.group_size = group, .bits = bits, .modules = {}};
  auto out = mlx_to_glass(in, q, owned, "test");
  if (!out) return out.error();
  EXPECT_EQ(out->size(), 1u) << "scales and biases are folded into the weight";
  return *out->at("layer.proj.weight");
}

void expect_values(const formats::SafetensorsTensor& t, const std::vector<float>& want) {
  std::vector<float> got(want.size());
  ASSERT_TRUE(
      formats::dequantize_row(*t.graph_dtype, t.data, got.data(), static_cast<int64_t>(got.size())).ok());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << t.dtype << " value " << i;
}

TEST(MlxTriplets, EightBitsBecomeQ8AWithTheSameValues) {
  for (const int64_t group : {32, 64, 128}) {
    const MlxMatrix m = make(3, 256, group, 8, 0.01f, static_cast<uint32_t>(group));
    HfOwnedTensors owned;
    auto t = convert(m, group, 8, owned);
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->graph_dtype, graph::DType::Q8_A);
    EXPECT_EQ(t->shape, (std::vector<int64_t>{3, 256}));
    expect_values(*t, m.values);
  }
}

TEST(MlxTriplets, FourBitsBecomeQ4_1UnlessF16WouldRoundTheirScales) {
  HfOwnedTensors owned;
  const MlxMatrix plain = make(2, 128, 64, 4, 0.01f, 1);
  auto t = convert(plain, 64, 4, owned);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->graph_dtype, graph::DType::Q4_1);
  expect_values(*t, plain.values);
  // Scales of ~1e-6 are f16 subnormals with fewer bits than bf16 gives them: Q4_1 would change them.
  const MlxMatrix tiny = make(2, 128, 64, 4, 1e-6f, 2);
  t = convert(tiny, 64, 4, owned);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->graph_dtype, graph::DType::Q8_A);
  expect_values(*t, tiny.values);
}

// Each triplet tensor is handed over once its copy is made, so the loader can drop its pages.
TEST(MlxTriplets, EachSourceTensorIsReportedReadOnce) {
  const MlxMatrix m = make(2, 64, 32, 8, 0.01f, 4);
  const SafetensorsTensors in{{m.w.name, &m.w}, {m.s.name, &m.s}, {m.b.name, &m.b}};
  HfOwnedTensors owned;
  std::vector<std::string> read;
  auto out = mlx_to_glass(in, {.group_size = 32, .bits = 8, .modules = {}}, owned, "test",
                          [&](const formats::SafetensorsTensor& t) { read.push_back(t.name); });
  ASSERT_TRUE(out.ok()) << out.error().message;
  std::sort(read.begin(), read.end());
  EXPECT_EQ(read, (std::vector<std::string>{"layer.proj.biases", "layer.proj.scales", "layer.proj.weight"}));
}

TEST(MlxTriplets, ErrorsNameTheModule) {
  HfOwnedTensors owned;
  MlxMatrix m = make(2, 64, 32, 8, 0.01f, 3);
  const SafetensorsTensors no_biases{{m.w.name, &m.w}, {m.s.name, &m.s}};
  auto r = mlx_to_glass(no_biases, {.group_size = 32, .bits = 8, .modules = {}}, owned, "dir");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(
      r.error().message.find("MLX weight 'layer.proj' needs .weight, .scales and .biases; it has no .biases"),
      std::string::npos)
      << r.error().message;
  auto four = convert(m, 32, 4, owned);  // 8-bit words read as 4-bit: twice the values the groups hold
  ASSERT_FALSE(four.ok());
  EXPECT_NE(four.error().message.find("'layer.proj'"), std::string::npos) << four.error().message;
  m.scales[1] = 0x7f80;  // +inf
  auto inf = convert(m, 32, 8, owned);
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().message.find("row 0, group 1"), std::string::npos) << inf.error().message;
}

}  // namespace
}  // namespace glass::models
