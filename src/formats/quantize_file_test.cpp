// quantize_gguf end to end: against llama-quantize's fixture files (same metadata, same per-tensor
// types and bytes), on a hand-written model carrying every metadata value type (the copy is exact,
// the alignment kept), and on bad inputs (typed errors, no file left behind).
#include "formats/quantize_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "formats/gguf.h"
#include "support/fixtures.h"
#include "support/gguf_writer.h"

namespace glass::formats {
namespace {

using graph::DType;
namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) { return fs::path(::testing::TempDir()) / name; }

std::string value_text(const GgufValue& v) {
  return std::string(gguf_type_name(v.type)) + "/" + std::string(gguf_type_name(v.elem_type)) + ":" +
         gguf_value_to_string(v, 1u << 20);
}

std::vector<std::pair<std::string, std::string>> metadata_text(const GgufFile& f) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : f.metadata()) out.emplace_back(k, value_text(v));
  return out;
}

class QuantizeFile : public test::WithSharedFixtures {};

TEST_F(QuantizeFile, SameFileContentAsLlamaQuantize) {
  const auto dir = fixtures_ / "models" / "synthetic";
  const auto in = dir / "llama-gqa-f32.gguf";
  auto src = GgufFile::open(in);
  ASSERT_TRUE(src.ok()) << src.error().message;
  for (const char* kind : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_m", "q4_k_m",
                           "q5_k_m", "q6_k"}) {
    const auto out = temp_path(std::string("quantized-") + kind + ".gguf");
    QuantizeOptions o;
    o.ftype = *file_type_from_name(kind);
    auto report = quantize_gguf(in, out, o);
    ASSERT_TRUE(report.ok()) << report.error().message;
    auto ours = GgufFile::open(out);
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    auto theirs = GgufFile::open(dir / (std::string("llama-gqa-") + kind + ".gguf"));
    ASSERT_TRUE(theirs.ok()) << theirs.error().message;
    EXPECT_EQ(ours->version(), 3u);
    EXPECT_EQ(metadata_text(*ours), metadata_text(*theirs)) << kind;  // keys, order, types, values
    // The tensors in llama-quantize's order (llama.cpp's loader order, whatever the input's), each
    // one's type, shape and bytes llama-quantize's.
    ASSERT_EQ(ours->tensors().size(), theirs->tensors().size());
    for (size_t i = 0; i < theirs->tensors().size(); ++i) {
      const GgufTensorInfo& t = ours->tensors()[i];
      EXPECT_EQ(t.name, theirs->tensors()[i].name);
      const GgufTensorInfo* r = theirs->find_tensor(t.name);
      ASSERT_NE(r, nullptr) << t.name;
      EXPECT_EQ(t.dtype, r->dtype) << kind << " " << t.name;
      EXPECT_EQ(t.shape, r->shape) << kind << " " << t.name;
      ASSERT_EQ(t.nbytes, r->nbytes) << kind << " " << t.name;
      EXPECT_EQ(std::memcmp(t.data, r->data, t.nbytes), 0) << kind << " " << t.name;
      EXPECT_EQ(report->tensors[i].to, r->dtype);
    }
    EXPECT_EQ(report->bytes_out, fs::file_size(dir / (std::string("llama-gqa-") + kind + ".gguf"))) << kind;
    fs::remove(out);
  }
}

// A small model with every metadata type, a 96-wide tensor (no K-quant fits), and alignment 64.
test::GgufWriter small_model() {
  using W = test::GgufWriter;
  W w;
  w.alignment(64);
  w.kv("general.architecture", W::string("llama"));
  w.kv("general.file_type", W::u32(0));
  w.kv("llama.block_count", W::u32(1));
  w.kv("llama.attention.head_count", W::u32(4));
  w.kv("a.u8", W::u8(200)).kv("a.i8", W::i8(-100)).kv("a.u16", W::u16(60000)).kv("a.i16", W::i16(-30000));
  w.kv("a.i32", W::i32(-7)).kv("a.f32", W::f32(0.1f)).kv("a.bool", W::boolean(true));
  w.kv("a.u64", W::u64(1ull << 60)).kv("a.i64", W::i64(-(1ll << 60))).kv("a.f64", W::f64(0.1));
  w.kv("a.strings", W::string_array({"x", "", "\xE2\x96\x81y"}));
  w.kv("a.floats", W::f32_array({1.5f, -2.0f}));
  w.kv("a.bools", W::array(W::kBool, {W::boolean(true), W::boolean(false)}));
  w.kv("a.nested", W::array(W::kArray, {W::i32_array({1, 2}), W::string_array({"z"})}));
  w.kv("a.empty", W::array(W::kU32, {}));
  w.kv("split.count", W::u16(1));  // dropped: the output is one file
  std::vector<float> m(64 * 256), narrow(64 * 96), norm(256, 1.0f);
  for (size_t i = 0; i < m.size(); ++i) m[i] = 0.01f * static_cast<float>((i * 37) % 101) - 0.5f;
  for (size_t i = 0; i < narrow.size(); ++i) narrow[i] = 0.02f * static_cast<float>((i * 11) % 23) - 0.2f;
  w.tensor_f32("blk.0.attn_q.weight", {64, 256}, m);
  w.tensor_f32("blk.0.attn_k.weight", {64, 96}, narrow);
  w.tensor_f32("blk.0.attn_norm.weight", {256}, norm);
  return w;
}

TEST(QuantizeFileSmall, MetadataCopiedAlignmentKeptFallbackReported) {
  const auto in = test::write_temp_file(small_model().build().bytes, "small-f32.gguf");
  const auto out = temp_path("small-q4_k_m.gguf");
  QuantizeOptions o;
  o.ftype = FileType::Q4_K_M;
  int calls = 0;
  o.on_tensor = [&](const QuantizedTensor&) { ++calls; };
  o.parallel = [](int64_t n, const std::function<void(int64_t)>& body) {
    for (int64_t i = n - 1; i >= 0; --i) body(i);  // any order must do
  };
  auto r = quantize_gguf(in, out, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(calls, 3);
  // In llama.cpp's loader order (as llama-quantize writes them): attn_k, attn_norm, attn_q.
  ASSERT_EQ(r->tensors.size(), 3u);
  EXPECT_EQ(r->tensors[0].to, DType::Q5_0);
  EXPECT_EQ(r->tensors[0].fallback, "rows of 96 not divisible by 256 (q4_k): falling back to q5_0");
  EXPECT_EQ(r->tensors[1].to, DType::F32);
  EXPECT_FALSE(r->tensors[1].quantizable);
  EXPECT_EQ(r->tensors[2].to, DType::Q4_K);

  auto a = GgufFile::open(in);
  auto b = GgufFile::open(out);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(b->alignment(), 64u);
  for (const GgufTensorInfo& t : b->tensors()) EXPECT_EQ(t.offset % 64, 0u) << t.name;
  auto expected = metadata_text(*a);
  std::erase_if(expected,
                [](const auto& kv) { return kv.first == "general.file_type" || kv.first == "split.count"; });
  expected.emplace_back("general.quantization_version", "u32/u8:2");
  expected.emplace_back("general.file_type", "u32/u8:15");
  EXPECT_EQ(metadata_text(*b), expected);
  // The kept tensor's bytes are copied; the quantized ones dequantize close to the input.
  EXPECT_EQ(b->tensors()[1].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(std::memcmp(a->tensors()[2].data, b->tensors()[1].data, a->tensors()[2].nbytes), 0);
  EXPECT_EQ(b->tensors()[0].dtype, DType::Q5_0);
}

TEST(QuantizeFileSmall, ErrorsLeaveNoFile) {
  const auto out = temp_path("never.gguf");
  // A quantized input cannot be requantized to another type.
  test::GgufWriter q;
  q.kv("general.architecture", test::GgufWriter::string("llama"))
      .kv("llama.block_count", test::GgufWriter::u32(1));
  q.tensor(
      {"blk.0.attn_q.weight", {32, 2}, test::GgufWriter::kTQ8_0, std::vector<uint8_t>(68, 0), std::nullopt});
  const auto qin = test::write_temp_file(q.build().bytes, "small-q8_0.gguf");
  QuantizeOptions o;
  o.ftype = FileType::Q4_0;
  auto r = quantize_gguf(qin, out, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::Unsupported);
  EXPECT_NE(r.error().message.find("blk.0.attn_q.weight"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("--allow-requantize"), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(out));
  // The same type is a copy.
  o.ftype = FileType::Q8_0;
  ASSERT_TRUE(quantize_gguf(qin, out, o).ok());
  fs::remove(out);
  // Allowed, the tensor is dequantized and quantized again.
  o.ftype = FileType::Q4_0;
  o.allow_requantize = true;
  ASSERT_TRUE(quantize_gguf(qin, out, o).ok());
  auto requantized = GgufFile::open(out);
  ASSERT_TRUE(requantized.ok()) << requantized.error().message;
  EXPECT_EQ(requantized->tensors()[0].dtype, DType::Q4_0);
  fs::remove(out);
  o.allow_requantize = false;

  // A non-finite weight: named with its row; the partial output is removed.
  auto w = small_model();
  std::vector<float> bad(64 * 256, 0.1f);
  bad[3 * 256 + 5] = std::numeric_limits<float>::infinity();
  w.tensor_f32("blk.0.ffn_up.weight", {64, 256}, bad);
  const auto in = test::write_temp_file(w.build().bytes, "small-inf.gguf");
  o.ftype = FileType::Q4_K_M;
  r = quantize_gguf(in, out, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(r.error().message.find("tensor 'blk.0.ffn_up.weight' row 3"), std::string::npos)
      << r.error().message;
  EXPECT_FALSE(fs::exists(out));
  // Nor is the temporary file beside it (output_file.h: ".<name>.<pid>.<random>.tmp").
  const std::string temp_prefix = fmt::format(".{}.", out.filename().string());
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    EXPECT_FALSE(e.path().filename().string().starts_with(temp_prefix)) << e.path();

  // A missing input is the reader's error.
  r = quantize_gguf(temp_path("no-such-file.gguf"), out, o);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace glass::formats
