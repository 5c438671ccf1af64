// Hyper-parameter reading: per-layer kinds from attention.sliding_window_pattern (a period, a bool
// array, or the family's default period when the key is absent), and errors naming the key.
#include "models/hparam_reader.h"

#include <gtest/gtest.h>

#include "support/gguf_writer.h"

namespace glass::models {
namespace {

using test::GgufWriter;

formats::GgufFile open(const GgufWriter& w, const char* name) {
  auto f = formats::GgufFile::open(test::write_temp_file(w.build().bytes, name));
  EXPECT_TRUE(f.ok()) << (f.ok() ? "" : f.error().message);
  return std::move(*f);
}

TEST(HparamReader, PatternKeyAbsentUsesTheFamilyDefaultPeriod) {
  GgufWriter w;
  w.kv("gemma3.block_count", GgufWriter::u32(8));
  const auto f = open(w, "no_pattern.gguf");
  HparamReader r(f, "gemma3");
  // llama.cpp's rule with period 6: layer i is local iff i % 6 < 5.
  EXPECT_EQ(r.sliding_layers(8, 6), (std::vector<bool>{true, true, true, true, true, false, true, true}));
  EXPECT_TRUE(r.status().ok());
}

TEST(HparamReader, PatternPeriodFromTheFile) {
  GgufWriter w;
  w.kv("gemma3.attention.sliding_window_pattern", GgufWriter::u32(2));
  const auto f = open(w, "pattern2.gguf");
  HparamReader r(f, "gemma3");
  EXPECT_EQ(r.sliding_layers(4, 6), (std::vector<bool>{true, false, true, false}));
}

TEST(HparamReader, PatternAsBoolArray) {
  GgufWriter w;
  w.kv("gemma3n.attention.sliding_window_pattern",
       GgufWriter::array(GgufWriter::kBool,
                         {GgufWriter::boolean(true), GgufWriter::boolean(false), GgufWriter::boolean(true)}));
  const auto f = open(w, "pattern_array.gguf");
  HparamReader r(f, "gemma3n");
  EXPECT_EQ(r.sliding_layers(3, 5), (std::vector<bool>{true, false, true}));
  HparamReader wrong(f, "gemma3n");
  wrong.sliding_layers(4, 5);  // the array has 3 entries
  ASSERT_FALSE(wrong.status().ok());
  EXPECT_NE(wrong.status().error().message.find("gemma3n.attention.sliding_window_pattern"),
            std::string::npos);
}

TEST(HparamReader, MissingRequiredKeyIsNamed) {
  GgufWriter w;
  w.kv("gemma2.block_count", GgufWriter::u32(2));
  const auto f = open(w, "missing.gguf");
  HparamReader r(f, "gemma2");
  EXPECT_EQ(r.required_int("block_count"), 2);
  EXPECT_EQ(r.optional_float("attn_logit_softcapping", 0.0f), 0.0f);
  EXPECT_TRUE(r.status().ok());
  r.required_int("embedding_length");
  r.required_int("attention.head_count");  // the first error wins
  ASSERT_FALSE(r.status().ok());
  EXPECT_NE(r.status().error().message.find("gemma2.embedding_length"), std::string::npos)
      << r.status().error().message;
}

TEST(HparamReader, PerLayerValuesFromScalarOrArray) {
  GgufWriter w;
  w.kv("a.feed_forward_length", GgufWriter::u32(128));
  w.kv("b.feed_forward_length", GgufWriter::i32_array({64, 64, 32}));
  const auto f = open(w, "per_layer.gguf");
  HparamReader a(f, "a"), b(f, "b");
  EXPECT_EQ(a.per_layer_int("feed_forward_length", 2), (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(b.per_layer_int("feed_forward_length", 3), (std::vector<int64_t>{64, 64, 32}));
  b.per_layer_int("feed_forward_length", 4);
  EXPECT_FALSE(b.status().ok());
}

}  // namespace
}  // namespace glass::models
