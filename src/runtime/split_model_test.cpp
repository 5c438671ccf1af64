// load_llm and the tools on split GGUFs and GGUF folders (stories260K split by the test as llama.cpp's
// gguf-split splits, support/gguf_split.h): the same logits bit for bit as the unsplit file whichever
// shard or folder is passed, on both backends; errors from the shards' checks reach the caller.
#include <gtest/gtest.h>

#include <filesystem>

#include "glass/llm.h"
#include "glass/tools.h"
#include "runtime/verify.h"
#include "support/gguf_split.h"
#include "support/safetensors_writer.h"

namespace glass {
namespace {

namespace fs = std::filesystem;

const std::vector<int32_t> kIds{1, 403, 407, 261, 378, 316, 2, 29, 400};

std::vector<float> logits(const fs::path& path, const std::string& backend, ModelInfo* info = nullptr) {
  auto model = load_llm(path.string(), {.backend = backend});
  EXPECT_TRUE(model.ok()) << path << ": " << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  if (info != nullptr) *info = (*model)->info();
  auto mode = verify::parse_mode("prefill", static_cast<int64_t>(kIds.size()));
  auto out = verify::eval_logits(**model, kIds, *mode);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
  return out.ok() ? *out : std::vector<float>{};
}

std::vector<fs::path> split3(const fs::path& dir) {
  return test::write_gguf_split(test::stories260k(), dir / "stories", {.starts = {0, 17, 33}});
}

uint64_t total_size(const std::vector<fs::path>& paths) {
  uint64_t n = 0;
  for (const fs::path& p : paths) n += fs::file_size(p);
  return n;
}

TEST(SplitModel, SameLogitsAsTheWholeFile) {
  const fs::path dir = test::make_temp_dir("split_logits");
  const auto paths = split3(dir);
  ASSERT_EQ(paths.size(), 3u);
  for (const char* backend : {"ref", "cpu"}) {
    const auto want = logits(test::stories260k(), backend);
    ASSERT_FALSE(want.empty());
    for (const fs::path& p : {paths[0], paths[2], dir}) {
      ModelInfo info;
      EXPECT_EQ(logits(p, backend, &info), want) << backend << " " << p;
      EXPECT_EQ(info.file_bytes, total_size(paths)) << p;  // every shard mapped, none read twice
      EXPECT_EQ(info.path, p.string());
    }
  }
}

TEST(SplitModel, HubSnapshotFolderWithConfigJsonAndProjector) {
  // A hub GGUF repository: the original config.json beside the GGUF files (no safetensors), a
  // vision projector, a README.
  const fs::path dir = test::make_temp_dir("split_hub");
  const auto paths = split3(dir);
  test::write_text(dir / "config.json", R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"]})");
  test::write_text(dir / "README.md", "# stories");
  fs::copy_file(test::stories260k(), dir / "mmproj-stories-f16.gguf");
  EXPECT_EQ(logits(dir, "ref"), logits(test::stories260k(), "ref"));
}

TEST(SplitModel, ToolsReadSplitInputs) {
  const fs::path dir = test::make_temp_dir("split_tools");
  const auto paths = split3(dir);
  auto whole = TextTokenizer::load(test::stories260k().string());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  for (const fs::path& p : {paths[2], dir}) {  // the vocabulary is in the first shard
    auto tok = TextTokenizer::load(p.string());
    ASSERT_TRUE(tok.ok()) << p << ": " << tok.error().message;
    EXPECT_EQ(*(*tok)->tokenize("Once upon a time"), *(*whole)->tokenize("Once upon a time"));
  }
  fs::create_directories(dir / "out");  // not in the folder: a second model there would be ambiguous
  auto q = quantize_model(dir.string(), (dir / "out" / "f16.gguf").string(), {.type = "f16"});
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->tensors.size(), 48u);
  EXPECT_EQ(q->bytes_in, total_size(paths));
  auto model = load_llm((dir / "out" / "f16.gguf").string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->info().file_type, "F16");
}

TEST(SplitModelErrors, ReachTheCaller) {
  const fs::path dir = test::make_temp_dir("split_errors");
  const auto paths = split3(dir);
  fs::copy_file(test::stories260k(), dir / "stories-f32.gguf");
  auto two = load_llm(dir.string(), {.backend = "ref"});
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(two.error().message.find("holds 2 GGUF models"), std::string::npos) << two.error().message;
  fs::remove(paths[1]);
  auto missing = load_llm(paths[0].string(), {.backend = "ref"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(missing.error().message.find(paths[1].string()), std::string::npos) << missing.error().message;
}

}  // namespace
}  // namespace glass
