// GgufFile on the real stories260K.gguf fixture and on generated files covering every value type.
// Expected fixture numbers were read independently with a Python struct-based parser.
#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "support/fixtures.h"
#include "support/gguf_writer.h"

namespace glass::formats {
namespace {

using test::GgufWriter;

float f32_at(const GgufTensorInfo& t, size_t i) {
  float v = 0;
  std::memcpy(&v, static_cast<const uint8_t*>(t.data) + 4 * i, 4);
  return v;
}

class GgufStories : public test::WithSharedFixtures {};

TEST_F(GgufStories, HeaderMetadataAndTensors) {
  auto f = GgufFile::open(fixtures_ / "models" / "stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->metadata().size(), 19u);
  EXPECT_EQ(f->metadata().front().first, "tokenizer.ggml.tokens");  // file order
  ASSERT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(f->tensors()[0].name, "token_embd.weight");
  EXPECT_EQ(f->tensors()[47].name, "blk.4.ffn_norm.weight");

  EXPECT_EQ(*f->get_u32("llama.block_count"), 5u);
  EXPECT_EQ(*f->get_u32("llama.embedding_length"), 64u);
  EXPECT_EQ(*f->get_u32("tokenizer.ggml.padding_token_id"), 4294967295u);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_f32("llama.attention.layer_norm_rms_epsilon"),
            std::bit_cast<float>(0x3727c5acu));       // 1e-5f
  EXPECT_EQ(*f->get_f32("llama.block_count"), 5.0f);  // integers convert

  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  ASSERT_EQ(tokens->size(), 512u);
  EXPECT_EQ((*tokens)[0], "<unk>");
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ((*tokens)[3], "<0x00>");
  auto types = f->get_i32_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok()) << types.error().message;
  ASSERT_EQ(types->size(), 512u);
  EXPECT_EQ((std::vector<int32_t>(types->begin(), types->begin() + 4)), (std::vector<int32_t>{2, 3, 3, 6}));
  auto scores = f->get_f32_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores.ok());
  EXPECT_EQ(scores->size(), 512u);

  const GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(emb->dtype, graph::DType::F32);
  EXPECT_EQ(emb->offset, 14176u);  // data section start; tensor offset 0
  EXPECT_EQ(emb->nbytes, 512u * 64 * 4);
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*emb, 0)), 0xbe96e950u);      // -0.29474878
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*emb, 64)), 0xbe0222c0u);     // [1][0] = -0.12708569
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*emb, 6407)), 0x3cd0d22eu);   // [100][7] = 0.025490846
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*emb, 32767)), 0xbed91acdu);  // [511][63] = -0.4240326
  const GgufTensorInfo* down = f->find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{64, 172}));
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*down, 11007)), 0xbb65d38bu);  // last element
  const GgufTensorInfo* norm = f->find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(std::bit_cast<uint32_t>(f32_at(*norm, 5)), 0x408d9a5fu);  // 4.425094
  EXPECT_EQ(f->find_tensor("nope"), nullptr);
}

TEST_F(GgufStories, GetterErrorsNameFileKeyAndTypes) {
  auto f = GgufFile::open(fixtures_ / "models" / "stories260K.gguf");
  ASSERT_TRUE(f.ok());
  auto missing = f->get_u32("llama.no_such_key");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(missing.error().message.find("stories260K.gguf: key 'llama.no_such_key' is missing"),
            std::string::npos)
      << missing.error().message;
  auto wrong = f->get_string("llama.block_count");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("has type u32, expected string"), std::string::npos)
      << wrong.error().message;
  auto not_array = f->get_string_array("tokenizer.ggml.scores");
  ASSERT_FALSE(not_array.ok());
  EXPECT_NE(not_array.error().message.find("array of f32, expected array of string"), std::string::npos)
      << not_array.error().message;
  EXPECT_FALSE(f->get_bool("general.architecture").ok());
  EXPECT_FALSE(f->get_i32_array("tokenizer.ggml.tokens").ok());
}

GgufWriter every_type_writer() {
  GgufWriter w;
  w.kv("u8", GgufWriter::u8(200))
      .kv("i8", GgufWriter::i8(-100))
      .kv("u16", GgufWriter::u16(60000))
      .kv("i16", GgufWriter::i16(-30000))
      .kv("u32", GgufWriter::u32(4000000000u))
      .kv("i32", GgufWriter::i32(-2000000000))
      .kv("f32", GgufWriter::f32(1.5f))
      .kv("bool", GgufWriter::boolean(true))
      .kv("string", GgufWriter::string("hi \"there\"\n"))
      .kv("u64", GgufWriter::u64(1ull << 40))
      .kv("i64", GgufWriter::i64(-(1ll << 40)))
      .kv("f64", GgufWriter::f64(0.25))
      .kv("small_u64", GgufWriter::u64(7))
      .kv("neg_i32", GgufWriter::i32(-1))
      .kv("strings", GgufWriter::string_array({"a", "", "ccc"}))
      .kv("floats", GgufWriter::f32_array({1.0f, -2.5f}))
      .kv("ints", GgufWriter::i32_array({1, -2, 3}))
      .kv("u8s", GgufWriter::array(GgufWriter::kU8, {GgufWriter::u8(1), GgufWriter::u8(255)}))
      .kv("big_u32s", GgufWriter::array(GgufWriter::kU32, {GgufWriter::u32(1), GgufWriter::u32(3000000000u)}))
      .kv("f64s", GgufWriter::array(GgufWriter::kF64, {GgufWriter::f64(0.5), GgufWriter::f64(-8)}))
      .kv("bools",
          GgufWriter::array(GgufWriter::kBool, {GgufWriter::boolean(false), GgufWriter::boolean(true)}))
      .kv("empty", GgufWriter::array(GgufWriter::kF32, {}))
      .kv("nested", GgufWriter::array(GgufWriter::kArray,
                                      {GgufWriter::i32_array({1, 2}), GgufWriter::string_array({"x"})}));
  return w;
}

TEST(Gguf, EveryValueType) {
  auto w = every_type_writer();
  w.tensor_f32("a", {2, 3}, {1, 2, 3, 4, 5, 6}).tensor_f32("b", {8}, {0, 1, 2, 3, 4, 5, 6, 7});
  const auto built = w.build();
  auto f = GgufFile::open(test::write_temp_file(built.bytes, "every_type.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->metadata().size(), 23u);
  EXPECT_EQ(*f->get_u32("u8"), 200u);
  EXPECT_EQ(*f->get_u32("u16"), 60000u);
  EXPECT_EQ(*f->get_u32("u32"), 4000000000u);
  EXPECT_EQ(*f->get_u32("small_u64"), 7u);
  EXPECT_EQ(f->find("i8")->i64, -100);
  EXPECT_EQ(f->find("i16")->i64, -30000);
  EXPECT_EQ(f->find("i32")->i64, -2000000000);
  EXPECT_EQ(f->find("i64")->i64, -(1ll << 40));
  EXPECT_EQ(f->find("u64")->u64, 1ull << 40);
  EXPECT_EQ(*f->get_f32("f32"), 1.5f);
  EXPECT_EQ(*f->get_f32("f64"), 0.25f);
  EXPECT_EQ(*f->get_f32("i8"), -100.0f);
  EXPECT_TRUE(*f->get_bool("bool"));
  EXPECT_EQ(*f->get_string("string"), "hi \"there\"\n");
  EXPECT_EQ(*f->get_string_array("strings"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(*f->get_f32_array("floats"), (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(*f->get_f32_array("f64s"), (std::vector<float>{0.5f, -8.0f}));
  EXPECT_EQ(*f->get_i32_array("ints"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(*f->get_i32_array("u8s"), (std::vector<int32_t>{1, 255}));
  EXPECT_TRUE(f->get_f32_array("empty")->empty());

  // Range errors name the key and the value.
  auto neg = f->get_u32("neg_i32");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.error().message.find("key 'neg_i32' = -1 does not fit in u32"), std::string::npos)
      << neg.error().message;
  EXPECT_FALSE(f->get_u32("u64").ok());
  auto big = f->get_i32_array("big_u32s");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("element 1 = 3000000000 does not fit in i32"), std::string::npos)
      << big.error().message;
  EXPECT_FALSE(f->get_u32("f32").ok());
  EXPECT_FALSE(f->get_bool("u8").ok());

  const GgufValue* nested = f->find("nested");
  ASSERT_NE(nested, nullptr);
  EXPECT_EQ(nested->elem_type, GgufValueType::ARRAY);
  ASSERT_EQ(nested->count, 2u);
  EXPECT_EQ(nested->items[0].element(1).i64, 2);
  EXPECT_EQ(nested->items[1].strings[0], "x");

  // Printing.
  EXPECT_EQ(gguf_value_to_string(*f->find("u8")), "200");
  EXPECT_EQ(gguf_value_to_string(*f->find("i64")), "-1099511627776");
  EXPECT_EQ(gguf_value_to_string(*f->find("f32")), "1.5");
  EXPECT_EQ(gguf_value_to_string(*f->find("bool")), "true");
  EXPECT_EQ(gguf_value_to_string(*f->find("string")), "\"hi \\\"there\\\"\\n\"");
  EXPECT_EQ(gguf_value_to_string(*f->find("strings")), "[\"a\", \"\", \"ccc\"]");
  EXPECT_EQ(gguf_value_to_string(*f->find("ints"), 2), "[1, -2, ... (3 items)]");
  EXPECT_EQ(gguf_value_to_string(*f->find("bools")), "[false, true]");
  EXPECT_EQ(gguf_value_to_string(*f->find("nested")), "[[1, 2], [\"x\"]]");
  EXPECT_EQ(gguf_value_to_string(*f->find("empty")), "[]");

  // Tensors: shapes outermost first, data in place and aligned.
  ASSERT_EQ(f->tensors().size(), 2u);
  const auto& a = f->tensors()[0];
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.nbytes, 24u);
  EXPECT_EQ(a.offset, built.data_start);
  EXPECT_EQ(f32_at(a, 5), 6.0f);
  const auto& b = f->tensors()[1];
  EXPECT_EQ(b.offset, built.data_start + 32);
  EXPECT_EQ(b.offset % 32, 0u);
  EXPECT_EQ(f32_at(b, 7), 7.0f);
}

TEST(Gguf, Version2CustomAlignmentAndNoTensors) {
  GgufWriter w(2);
  w.alignment(64).kv("x", GgufWriter::string("y"));
  w.tensor_f32("t0", {4}, {1, 2, 3, 4}).tensor_f32("t1", {4}, {5, 6, 7, 8});
  auto f = GgufFile::open(test::write_temp_file(w.build().bytes, "v2.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->tensors()[1].offset - f->tensors()[0].offset, 64u);
  EXPECT_EQ(f32_at(f->tensors()[1], 3), 8.0f);

  GgufWriter empty;
  auto e = GgufFile::open(test::write_temp_file(empty.build().bytes, "empty.gguf"));
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_TRUE(e->metadata().empty());
  EXPECT_TRUE(e->tensors().empty());
}

// String arrays are walked in place: element(i) from the nearest checkpoint, iteration in order;
// both agree on every element across checkpoint boundaries, empty strings included.
TEST(Gguf, StringArraysReadInPlaceAtAnyIndex) {
  std::vector<std::string> texts;
  for (size_t i = 0; i < 3 * GgufStrings::kStride + 5; ++i)
    texts.push_back(std::string(i % 7, 'a' + (i % 26)));
  GgufWriter w;
  w.kv("many", GgufWriter::string_array(texts)).kv("none", GgufWriter::string_array({}));
  auto f = GgufFile::open(test::write_temp_file(w.build().bytes, "strings.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto many = f->get_string_views("many");
  ASSERT_TRUE(many.ok());
  const GgufStrings& s = **many;
  ASSERT_EQ(s.size(), texts.size());
  for (size_t i = texts.size(); i-- > 0;) EXPECT_EQ(s[i], texts[i]) << i;
  size_t i = 0;
  for (std::string_view t : s) EXPECT_EQ(t, texts[i++]);
  EXPECT_EQ(i, texts.size());
  EXPECT_EQ(f->find("many")->element(2 * GgufStrings::kStride + 3).str, texts[2 * GgufStrings::kStride + 3]);
  auto none = f->get_string_views("none");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE((*none)->empty());
  EXPECT_EQ((*none)->begin(), (*none)->end());
}

TEST(Gguf, CopiesShareTheMapping) {
  auto w = every_type_writer();
  w.tensor_f32("t", {2}, {3, 4});
  std::optional<GgufFile> copy;
  {
    auto f = GgufFile::open(test::write_temp_file(w.build().bytes, "copy.gguf"));
    ASSERT_TRUE(f.ok());
    copy = *f;
  }
  EXPECT_EQ(*copy->get_string_array("strings"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(f32_at(*copy->find_tensor("t"), 1), 4.0f);
  EXPECT_NE(copy->find("u8"), nullptr);
}

TEST(Gguf, QuantizedTensorSizes) {
  GgufWriter w;
  GgufWriter::Tensor q;
  q.name = "q";
  q.ne = {64, 3};  // 3 rows of 64 Q8_0 weights: 2 blocks of 34 bytes each
  q.type = GgufWriter::kTQ8_0;
  q.data.assign(3 * 2 * 34, 0);
  w.tensor(q);
  auto f = GgufFile::open(test::write_temp_file(w.build().bytes, "q8.gguf"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->tensors()[0].dtype, graph::DType::Q8_0);
  EXPECT_EQ(f->tensors()[0].shape, (std::vector<int64_t>{3, 64}));
  EXPECT_EQ(f->tensors()[0].nbytes, 204u);
}

}  // namespace
}  // namespace glass::formats
