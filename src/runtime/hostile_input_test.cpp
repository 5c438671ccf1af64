// Issue 29 at the public API: a model that produces NaN or infinite logits (overflowing or corrupted
// weights) ends generation with an error naming the step, never a normal "stop" or an arbitrary
// sampled token; paths that are not regular files are refused by load_llm without blocking.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "formats/gguf.h"
#include "glass/llm.h"
#include "graph/dtype.h"
#include "support/counting_new.h"
#include "support/fixtures.h"
#include "support/gguf_writer.h"
#include "support/tiny_llama.h"

namespace glass {
namespace {

// The tiny llama with every value of `tensor` replaced by `value`.
std::filesystem::path poisoned(const std::string& tensor, float value, const std::string& name) {
  const auto path = test::write_tiny_llama({}, name);
  auto file = formats::GgufFile::open(path);
  EXPECT_TRUE(file.ok());
  const formats::GgufTensorInfo* t = file->find_tensor(tensor);
  EXPECT_NE(t, nullptr);
  const uint64_t offset = t->offset, bytes = t->nbytes;
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  for (uint64_t i = 0; i < bytes / 4; ++i) f.write(reinterpret_cast<const char*>(&value), 4);
  return path;
}

TEST(NonFiniteLogits, GenerationEndsWithAnErrorNamingTheStep) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const auto path = poisoned("output_norm.weight", bad, std::isnan(bad) ? "nan.gguf" : "inf.gguf");
    auto model = load_llm(path.string(), LoadOptions{.backend = "ref"});
    ASSERT_TRUE(model.ok()) << model.error().message;
    auto session = (*model)->new_session();
    ASSERT_TRUE(session.ok()) << session.error().message;
    GenerateConfig config;
    config.max_tokens = 4;
    auto r = generate(**session, std::vector<int32_t>{1, 4, 5}, config);
    ASSERT_FALSE(r.ok()) << "finished as " << finish_reason_name(r->finish);
    EXPECT_EQ(r.error().code, ErrorCode::Internal);
    EXPECT_NE(r.error().message.find("non-finite logits at generation step 1"), std::string::npos)
        << r.error().message;
  }
}

TEST(NonFiniteLogits, FiniteModelsGenerateAsBefore) {
  auto model = load_llm(test::write_tiny_llama({}, "finite.gguf").string(), LoadOptions{.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto session = (*model)->new_session();
  ASSERT_TRUE(session.ok());
  GenerateConfig config;
  config.max_tokens = 3;
  config.stop_at_end_of_generation = false;
  auto r = generate(**session, std::vector<int32_t>{1, 4, 5}, config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens.size(), 3u);
}

TEST(HostileLoad, NonRegularFilesAreRefusedWithoutBlocking) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("load-fifo-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "model.gguf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: opening it for a blocking read would hang the test.
  for (const std::string& path : {fifo.string(), std::string("/dev/zero")}) {
    auto model = load_llm(path, LoadOptions{.backend = "ref"});
    ASSERT_FALSE(model.ok()) << path;
    EXPECT_EQ(model.error().code, ErrorCode::Io) << model.error().message;
    EXPECT_NE(model.error().message.find("not a regular file"), std::string::npos) << model.error().message;
    EXPECT_NE(model.error().message.find(path), std::string::npos) << model.error().message;
  }
}

TEST(HostileLoad, SizesPastTheInt32PositionsAreRefused) {
  const auto path = test::write_tiny_llama({}, "sizes.gguf").string();
  for (auto set : {+[](LoadOptions& o) { o.n_ctx = int64_t{1} << 40; },
                   +[](LoadOptions& o) { o.kv_size = int64_t{1} << 33; },
                   +[](LoadOptions& o) { o.n_batch = int64_t{1} << 31; }}) {
    LoadOptions o{.backend = "ref"};
    set(o);
    auto model = load_llm(path, o);
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.error().code, ErrorCode::InvalidArgument);
    EXPECT_NE(model.error().message.find("is more than the 2147483647 positions"), std::string::npos)
        << model.error().message;
  }
}

// A small file claiming a 1-layer model with no tensors and 3 million tokens is refused by the
// model's shape before its token list becomes a vocabulary: the refusal costs the file's string
// offsets (4 bytes a token), not a tokenizer (it cost ~130 MB when the tokenizer came first).
TEST(HostileLoad, AModelWithoutTensorsIsRefusedBeforeItsVocabularyIsBuilt) {
  std::filesystem::path path;
  {
    test::GgufWriter w;
    w.kv("general.architecture", test::GgufWriter::string("llama"));
    w.kv("llama.block_count", test::GgufWriter::u32(1));
    w.kv("llama.embedding_length", test::GgufWriter::u32(64));
    w.kv("llama.attention.head_count", test::GgufWriter::u32(4));
    w.kv("llama.feed_forward_length", test::GgufWriter::u32(128));
    w.kv("tokenizer.ggml.model", test::GgufWriter::string("gpt2"));
    std::vector<std::string> tokens;
    for (int i = 0; i < 3000000; ++i) tokens.push_back(fmt::format("t{}", i));
    w.kv("tokenizer.ggml.tokens", test::GgufWriter::string_array(tokens));
    w.kv("tokenizer.ggml.merges", test::GgufWriter::string_array({"t 1"}));
    path = test::write_temp_file(w.build().bytes, "load-tokens.gguf");
  }
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  {
    auto model = load_llm(path.string(), LoadOptions{.backend = "ref"});
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.error().code, ErrorCode::InvalidFile);
    EXPECT_NE(model.error().message.find("0 tensors"), std::string::npos) << model.error().message;
  }
  EXPECT_LE(test::peak_bytes() - before, uint64_t{24} << 20) << "peak " << test::peak_bytes() - before;
  std::filesystem::remove(path);
}

// A quantized block whose scale is NaN, infinite (or MXFP4's E8M0 NaN) is refused at load, naming the
// tensor, its type and the block (formats/quant_check.h), in llama-quantize's files of several types.
TEST(DamagedBlocks, ANonFiniteScaleIsRefusedAtLoadNamingTheTensorAndBlock) {
  struct Case {
    const char* file;
    const char* tensor;
    const char* type;
    size_t offset;       // of the field in the block
    uint16_t bits;       // written there (one byte for MXFP4's exponent)
    const char* expect;  // the field and value the error names
  };
  const Case cases[] = {
      {"weight-types/llama-gqa-iq4_xs.gguf", "blk.1.ffn_up.weight", "iq4_xs", 0, 0x7E00, "scale d = nan"},
      {"weight-types/llama-gqa-iq4_nl.gguf", "blk.0.attn_q.weight", "iq4_nl", 0, 0x7C00, "scale d = inf"},
      {"weight-types/llama-gqa-iq4_xs.gguf", "blk.0.attn_v.weight", "q5_k", 2, 0xFC00, "scale dmin = -inf"},
      {"weight-types/llama-gqa-iq4_xs.gguf", "output.weight", "q6_k", 208, 0x7E01, "scale d = nan"},
      {"synthetic-2026/gptoss-mxfp4_moe.gguf", "blk.1.ffn_down_exps.weight", "mxfp4", 0, 0xFF,
       "scale e = 0xff"},
  };
  for (const Case& c : cases) {
    const auto src = test::source_dir() / "tests/fixtures/models" / c.file;
    const auto path = std::filesystem::temp_directory_path() / fmt::format("damaged-{}.gguf", c.type);
    std::filesystem::copy_file(src, path, std::filesystem::copy_options::overwrite_existing);
    auto file = formats::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    const formats::GgufTensorInfo* t = file->find_tensor(c.tensor);
    ASSERT_NE(t, nullptr) << c.tensor;
    ASSERT_EQ(graph::dtype_name(t->dtype), c.type);
    const size_t block = 5 * static_cast<size_t>(graph::traits(t->dtype).block_bytes);
    {
      std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
      f.seekp(static_cast<std::streamoff>(t->offset + block + c.offset));
      f.write(reinterpret_cast<const char*>(&c.bits), std::string_view(c.type) == "mxfp4" ? 1 : 2);
    }
    auto model = load_llm(path.string(), LoadOptions{.backend = "ref"});
    ASSERT_FALSE(model.ok()) << c.file << " " << c.tensor;
    EXPECT_EQ(model.error().code, ErrorCode::InvalidFile);
    for (const std::string& part :
         {fmt::format("tensor '{}' ({})", c.tensor, c.type), std::string("block 5"), std::string(c.expect)})
      EXPECT_NE(model.error().message.find(part), std::string::npos) << model.error().message;
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace glass
