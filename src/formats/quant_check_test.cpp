// find_bad_block on every quantized type: clean tensors pass, and a NaN or infinite scale field (an
// E8M0 0xFF for MXFP4) is found in the block and field where it is.
#include "formats/quant_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "formats/quantize.h"

namespace glass::formats {
namespace {

using graph::DType;

std::vector<uint8_t> clean(DType t, int64_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> q(*graph::dtype_bytes(t, static_cast<uint64_t>(n)));
  EXPECT_TRUE(quantize_row(t, x.data(), q.data(), n).ok()) << graph::dtype_name(t);
  return q;
}

TEST(QuantCheck, NonFiniteScaleFieldsAreFoundWhereTheyAre) {
  struct Case {
    DType type;
    std::vector<std::pair<size_t, const char*>> fields;  // byte offset in the block, name
  };
  const Case cases[] = {
      {DType::Q4_0, {{0, "d"}}},
      {DType::Q4_1, {{0, "d"}, {2, "m"}}},
      {DType::Q5_0, {{0, "d"}}},
      {DType::Q5_1, {{0, "d"}, {2, "m"}}},
      {DType::Q8_0, {{0, "d"}}},
      {DType::Q2_K, {{80, "d"}, {82, "dmin"}}},
      {DType::Q3_K, {{108, "d"}}},
      {DType::Q4_K, {{0, "d"}, {2, "dmin"}}},
      {DType::Q5_K, {{0, "d"}, {2, "dmin"}}},
      {DType::Q6_K, {{208, "d"}}},
      {DType::IQ4_NL, {{0, "d"}}},
      {DType::IQ4_XS, {{0, "d"}}},
  };
  for (const Case& c : cases) {
    const int64_t bs = graph::traits(c.type).block_size, n = 5 * bs;
    const auto bb = static_cast<size_t>(graph::traits(c.type).block_bytes);
    const auto good = clean(c.type, n);
    EXPECT_FALSE(find_bad_block(c.type, good.data(), n)) << graph::dtype_name(c.type);
    for (const auto& [offset, name] : c.fields)
      for (const auto& [bits, value] : {std::pair<uint16_t, const char*>{0x7E00, "nan"},
                                        {0x7C00, "inf"},
                                        {0xFC00, "-inf"},
                                        {0xFD01, "nan"}}) {
        auto bad = good;
        std::memcpy(bad.data() + 3 * bb + offset, &bits, 2);
        const auto found = find_bad_block(c.type, bad.data(), n);
        ASSERT_TRUE(found) << graph::dtype_name(c.type) << " " << name << " " << value;
        EXPECT_EQ(found->block, 3);
        EXPECT_EQ(found->field, name);
        EXPECT_EQ(found->value, value);
      }
    auto largest = good;  // the largest finite f16 is a scale a file may hold
    const uint16_t max_f16 = 0x7BFF;
    std::memcpy(largest.data() + 2 * bb + c.fields[0].first, &max_f16, 2);
    EXPECT_FALSE(find_bad_block(c.type, largest.data(), n)) << graph::dtype_name(c.type);
  }
  // MXFP4: E8M0 0xFF is NaN; 0xFE (2^127) is a scale like any other.
  const auto good = clean(DType::MXFP4, 160);
  EXPECT_FALSE(find_bad_block(DType::MXFP4, good.data(), 160));
  auto bad = good;
  bad[2 * 17] = 0xFE;
  EXPECT_FALSE(find_bad_block(DType::MXFP4, bad.data(), 160));
  bad[4 * 17] = 0xFF;
  const auto found = find_bad_block(DType::MXFP4, bad.data(), 160);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->block, 4);
  EXPECT_EQ(found->field, "e");
  // Types without scale fields.
  const std::vector<uint8_t> nan_f16 = {0x00, 0x7E, 0x00, 0x7E};
  EXPECT_FALSE(find_bad_block(DType::F16, nan_f16.data(), 2));
}

}  // namespace
}  // namespace glass::formats
