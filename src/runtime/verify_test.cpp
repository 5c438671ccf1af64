// The metrics and thresholds behind `glass verify` and the conformance suite, on hand-made rows.
#include "runtime/verify.h"

#include <gtest/gtest.h>

#include <cmath>

namespace glass::verify {
namespace {

TEST(Verify, IdenticalLogitsPassEverything) {
  const std::vector<float> a{1, 2, 3, 4, -1, 0, 5, 2};
  const Metrics m = compare(a, a, 4);
  EXPECT_EQ(m.max_abs, 0.0);
  EXPECT_DOUBLE_EQ(m.min_pearson, 1.0);
  EXPECT_EQ(m.top1, 1.0);
  EXPECT_EQ(m.min_top10, 1.0);
  EXPECT_TRUE(breaches(m, thresholds(WeightClass::F32)).empty());
}

TEST(Verify, MetricsNameTheWorstRow) {
  const std::vector<float> ref{0, 1, 2, 3, 0, 1, 2, 3};
  const std::vector<float> got{0, 1, 2, 3, 0, 1, 2.5f, 2};  // row 1: argmax moves, max diff 1.0
  const Metrics m = compare(got, ref, 4);
  EXPECT_DOUBLE_EQ(m.max_abs, 1.0);
  EXPECT_EQ(m.max_abs_row, 1);
  EXPECT_EQ(m.min_pearson_row, 1);
  EXPECT_NEAR(m.mean_abs, 1.5 / 8, 1e-12);
  EXPECT_DOUBLE_EQ(m.top1, 0.5);
  // Pearson of (0,1,2.5,2) against (0,1,2,3): hand-computed
  const double gx[] = {0, 1, 2.5, 2}, fx[] = {0, 1, 2, 3};
  double mg = 1.375, mf = 1.5, sgf = 0, sgg = 0, sff = 0;
  for (int i = 0; i < 4; ++i) {
    sgf += (gx[i] - mg) * (fx[i] - mf);
    sgg += (gx[i] - mg) * (gx[i] - mg);
    sff += (fx[i] - mf) * (fx[i] - mf);
  }
  EXPECT_NEAR(m.min_pearson, sgf / std::sqrt(sgg * sff), 1e-6);
  const auto b = breaches(m, thresholds(WeightClass::F32));
  ASSERT_FALSE(b.empty());
  EXPECT_NE(b[0].find("max abs 1 > 0.0001 (row 1)"), std::string::npos) << b[0];
}

TEST(Verify, NanAndShapeMismatchAreBreaches) {
  const std::vector<float> ref{0, 1, 2, 3};
  const std::vector<float> nan{0, NAN, 2, 3};
  EXPECT_FALSE(breaches(compare(nan, ref, 4), thresholds(WeightClass::Quantized)).empty());
  const std::vector<float> short_row{0, 1, 2};
  EXPECT_FALSE(breaches(compare(short_row, ref, 4), thresholds(WeightClass::Quantized)).empty());
}

TEST(Verify, QuantizedThresholdsAreLooserThanF32) {
  Metrics m;
  m.max_abs = 0.02;
  m.mean_abs = 0.004;
  m.min_pearson = 0.9998;
  m.top1 = 0.95;
  EXPECT_TRUE(breaches(m, thresholds(WeightClass::Quantized)).empty());
  EXPECT_FALSE(breaches(m, thresholds(WeightClass::F32)).empty());
}

TEST(Verify, ModesParse) {
  EXPECT_EQ(parse_mode("prefill", 48)->chunk, 48);
  EXPECT_EQ(parse_mode("decode", 48)->chunk, 1);
  EXPECT_EQ(parse_mode("chunked:7", 48)->chunk, 7);
  EXPECT_FALSE(parse_mode("chunked:0", 48).ok());
  EXPECT_FALSE(parse_mode("chunked:x", 48).ok());
  EXPECT_FALSE(parse_mode("batch", 48).ok());
}

}  // namespace
}  // namespace glass::verify
