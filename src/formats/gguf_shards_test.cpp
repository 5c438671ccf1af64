// GgufShards on stories260K.gguf split by the test as llama.cpp's gguf-split splits (support/gguf_split.h):
// every shard found from any one, the tensors read in place from their own shard's mapping, each
// inconsistency between shards an error naming the file and key at fault; and the model of a folder.
#include "formats/gguf_shards.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "formats/quantize_file.h"
#include "support/gguf_split.h"
#include "support/safetensors_writer.h"

namespace glass::formats {
namespace {

namespace fs = std::filesystem;

// Three shards of stories260K's 48 tensors: 20, 20 and 8.
std::vector<fs::path> split3(const fs::path& dir, const test::SplitSpec& tweaks = {}) {
  test::SplitSpec spec = tweaks;
  spec.starts = {0, 20, 40};
  return test::write_gguf_split(test::stories260k(), dir / "stories", spec);
}

void expect_error(const fs::path& path, std::initializer_list<std::string> parts,
                  ErrorCode code = ErrorCode::InvalidFile) {
  auto shards = GgufShards::open(path);
  ASSERT_FALSE(shards.ok()) << path;
  EXPECT_EQ(shards.error().code, code) << shards.error().message;
  for (const std::string& p : parts)
    EXPECT_NE(shards.error().message.find(p), std::string::npos)
        << "missing '" << p << "' in: " << shards.error().message;
}

TEST(SplitName, ParsesWhatSplitPathWrites) {
  const auto s = parse_split_name("a/b/model-Q4_0-00002-of-00003.gguf");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->prefix, fs::path("a/b/model-Q4_0"));
  EXPECT_EQ(s->no, 1u);
  EXPECT_EQ(s->count, 3u);
  EXPECT_EQ(split_path(s->prefix, s->no, s->count), fs::path("a/b/model-Q4_0-00002-of-00003.gguf"));
  EXPECT_EQ(split_path("m", 0, 123456), fs::path("m-00001-of-123456.gguf"));
  EXPECT_TRUE(parse_split_name("m-00001-of-123456.gguf").has_value());
  for (const char* bad :
       {"model.gguf", "model-2-of-3.gguf", "model-00000-of-00003.gguf", "model-00004-of-00003.gguf",
        "model-00001-of-00003.GGUF", "model-+0001-of-00003.gguf", "model-00001-of-00003.gguf.part",
        "-of-00003.gguf", "model-00001-of-.gguf"})
    EXPECT_FALSE(parse_split_name(bad).has_value()) << bad;
}

TEST(GgufShards, AnyShardOpensTheWholeModelInPlace) {
  const fs::path dir = test::make_temp_dir("shards_whole");
  const auto paths = split3(dir);
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[1], dir / "stories-00002-of-00003.gguf");
  auto whole = GgufFile::open(test::stories260k());
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  for (const fs::path& p : paths) {
    auto shards = GgufShards::open(p);
    ASSERT_TRUE(shards.ok()) << p << ": " << shards.error().message;
    ASSERT_EQ(shards->files().size(), 3u);
    EXPECT_EQ(shards->metadata().path(), paths[0].string());
    EXPECT_EQ(*shards->metadata().get_string("general.architecture"), "llama");
    uint64_t bytes = 0;
    for (const fs::path& q : paths) bytes += fs::file_size(q);
    EXPECT_EQ(shards->file_bytes(), bytes);
    const auto tensors = shards->tensors();
    ASSERT_EQ(tensors.size(), whole->tensors().size());
    const auto mappings = shards->mappings();
    for (size_t i = 0; i < tensors.size(); ++i) {
      const GgufTensorInfo& want = whole->tensors()[i];
      EXPECT_EQ(tensors[i]->name, want.name);
      EXPECT_EQ(tensors[i]->shape, want.shape);
      ASSERT_EQ(tensors[i]->nbytes, want.nbytes);
      EXPECT_EQ(std::memcmp(tensors[i]->data, want.data, want.nbytes), 0) << want.name;
      // In the mapping of the shard that holds it: tensors 0-19 in the first, 40-47 in the third.
      const auto& m = mappings[i < 20 ? 0 : i < 40 ? 1 : 2];
      const auto* d = static_cast<const uint8_t*>(tensors[i]->data);
      EXPECT_TRUE(d >= m->data() && d + want.nbytes <= m->data() + m->size()) << want.name;
    }
  }
}

TEST(GgufShards, FirstShardWithoutTensors) {  // gguf-split --no-tensor-first-split
  const fs::path dir = test::make_temp_dir("shards_empty_first");
  test::write_gguf_split(test::stories260k(), dir / "m", {.starts = {0, 0, 30}});
  auto shards = GgufShards::open(dir / "m-00003-of-00003.gguf");
  ASSERT_TRUE(shards.ok()) << shards.error().message;
  EXPECT_TRUE(shards->files()[0].tensors().empty());
  EXPECT_EQ(shards->tensors().size(), 48u);
}

TEST(GgufShards, UnsplitFileIsOneShard) {
  auto shards = GgufShards::open(test::stories260k());
  ASSERT_TRUE(shards.ok()) << shards.error().message;
  EXPECT_EQ(shards->files().size(), 1u);
  EXPECT_EQ(shards->tensors().size(), 48u);
}

TEST(GgufShardsErrors, MissingShardIsNamed) {
  const fs::path dir = test::make_temp_dir("shards_missing");
  const auto paths = split3(dir);
  fs::remove(paths[1]);
  for (const fs::path& p : {paths[0], paths[2]})
    expect_error(p, {"shard 2 of 3 is missing", (dir / "stories-00002-of-00003.gguf").string()});
}

TEST(GgufShardsErrors, DuplicateSplitNo) {
  const fs::path dir = test::make_temp_dir("shards_duplicate_no");
  const auto paths = split3(dir, {.split_no = {{2, 1}}});  // the third shard says it is the second
  for (const fs::path& p : {paths[0], paths[2]})
    expect_error(p, {paths[2].string() + ": split.no is 1", "stories-00002-of-00003.gguf's number",
                     "its name makes it shard 3 of 3"});
}

TEST(GgufShardsErrors, SplitCountDisagrees) {
  const fs::path dir = test::make_temp_dir("shards_count");
  const auto paths = split3(dir, {.split_count = {{1, 2}}});
  expect_error(paths[0], {paths[1].string() + ": split.count is 2", "-*-of-00003.gguf are 3"});
  // Named as one of three, the file itself says two: found from its own keys too.
  expect_error(paths[1], {paths[1].string() + ": split.count is 2"});
}

TEST(GgufShardsErrors, TensorInTwoShards) {
  const fs::path dir = test::make_temp_dir("shards_twice");
  const auto paths = split3(dir, {.also = {{2, "token_embd.weight"}}});
  expect_error(paths[0],
               {"tensor 'token_embd.weight' is in two shards", paths[0].string(), paths[2].string()});
}

TEST(GgufShardsErrors, TensorCountMismatch) {
  const fs::path dir = test::make_temp_dir("shards_total");
  const auto paths = split3(dir, {.tensors_count = 49});
  expect_error(paths[1], {"its 3 shards hold 48 tensors, but split.tensors.count", "is 49"});
}

TEST(GgufShardsErrors, ShardNotNamedAsOne) {
  const fs::path dir = test::make_temp_dir("shards_renamed");
  const auto paths = split3(dir);
  fs::rename(paths[0], dir / "stories.gguf");
  expect_error(dir / "stories.gguf", {"split.count is 3, but the file is not named as a shard"});
}

TEST(GgufFolder, OneModelIsFoundAndMmprojIgnored) {
  const fs::path dir = test::make_temp_dir("folder_one");
  fs::copy_file(test::stories260k(), dir / "mmproj-stories-f16.gguf");  // a vision projector: not a model
  fs::copy_file(test::stories260k(), dir / "stories.gguf");
  test::write_text(dir / "README.md", "a hub snapshot");
  auto found = find_gguf_model(dir);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, dir / "stories.gguf");
}

// The folder's model is the split set `paths` (its first shard), and the folder opens as its 3 shards.
void expect_folder_opens_split3(const fs::path& dir, const std::vector<fs::path>& paths) {
  auto found = find_gguf_model(dir);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, paths[0]);
  auto shards = GgufShards::open(dir);
  ASSERT_TRUE(shards.ok()) << shards.error().message;
  EXPECT_EQ(shards->files().size(), 3u);
}

TEST(GgufFolder, SplitSetIsOneModel) {
  const fs::path dir = test::make_temp_dir("folder_split");
  const auto paths = split3(dir);
  fs::copy_file(test::stories260k(), dir / "stories-mmproj-f16.gguf");
  expect_folder_opens_split3(dir, paths);
  // Without its first shard the set is still one candidate, and opening it names what is missing.
  fs::remove(paths[0]);
  expect_error(dir, {"shard 1 of 3 is missing", paths[0].string()});
}

TEST(GgufFolder, SeveralModelsAreListed) {
  const fs::path dir = test::make_temp_dir("folder_two");
  fs::copy_file(test::stories260k(), dir / "stories-Q8_0.gguf");
  split3(dir);
  expect_error(dir,
               {"holds 2 GGUF models (stories-*-of-00003.gguf, stories-Q8_0.gguf)", "pass the file to load"},
               ErrorCode::InvalidArgument);
}

TEST(GgufFolder, NoModelNamesTheFolder) {
  const fs::path dir = test::make_temp_dir("folder_none");
  expect_error(dir, {dir.string(), "holds no model"}, ErrorCode::InvalidArgument);
  fs::copy_file(test::stories260k(), dir / "mmproj-model.gguf");
  fs::create_directories(dir / "Q4_0");
  expect_error(dir, {dir.string(), "holds no model", "within 4 levels of subfolders"},
               ErrorCode::InvalidArgument);
}

// Hub snapshots keep quantizations in subfolders (Q4_K_M/model-00001-of-00002.gguf): the shallowest
// level with a model decides; several there are listed by their path in the folder; hidden folders
// (.cache) are not searched.
TEST(GgufFolder, SubfoldersAreSearchedLevelByLevel) {
  const fs::path dir = test::make_temp_dir("folder_deep");
  fs::create_directories(dir / "Q4_0" / "split");
  fs::create_directories(dir / ".cache");
  fs::copy_file(test::stories260k(), dir / ".cache" / "stale.gguf");
  const auto paths = split3(dir / "Q4_0" / "split");
  expect_folder_opens_split3(dir, paths);
  fs::create_directories(dir / "BF16");
  fs::copy_file(test::stories260k(), dir / "BF16" / "stories-bf16.gguf");  // one level up: it decides
  auto found = find_gguf_model(dir);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, dir / "BF16" / "stories-bf16.gguf");
  fs::create_directories(dir / "Q8_0");
  fs::copy_file(test::stories260k(), dir / "Q8_0" / "stories-q8_0.gguf");
  expect_error(dir, {"holds 2 GGUF models (BF16/stories-bf16.gguf, Q8_0/stories-q8_0.gguf)"},
               ErrorCode::InvalidArgument);
  fs::copy_file(test::stories260k(), dir / "top.gguf");  // the top level decides over both
  found = find_gguf_model(dir);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, dir / "top.gguf");
}

// Writing a split model (gguf-split's layout): every shard within the limits, the metadata in the
// first, split.* in each; read back as one, it is the unsplit output byte for byte.
TEST(QuantizeSplit, WritesShardsThatReadBackAsTheWholeFile) {
  const fs::path dir = test::make_temp_dir("quantize_write_split");
  QuantizeOptions o;
  o.ftype = *file_type_from_name("f16");
  auto whole = quantize_gguf(test::stories260k(), dir / "whole.gguf", o);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  for (const auto& [max_tensors, max_bytes] : {std::pair<int64_t, uint64_t>{20, 0}, {0, 64 * 1024}}) {
    QuantizeOptions so = o;
    so.split_max_tensors = max_tensors;
    so.split_max_bytes = max_bytes;
    const fs::path out = dir / fmt::format("split{}.gguf", max_tensors);
    auto split = quantize_gguf(test::stories260k(), out, so);
    ASSERT_TRUE(split.ok()) << split.error().message;
    ASSERT_GE(split->files.size(), 2u);
    EXPECT_FALSE(fs::exists(out));  // only the shards
    uint64_t bytes = 0;
    for (size_t k = 0; k < split->files.size(); ++k) {
      const fs::path& p = split->files[k];
      EXPECT_EQ(p, dir / fmt::format("split{}-{:05}-of-{:05}.gguf", max_tensors, k + 1, split->files.size()));
      auto f = GgufFile::open(p);
      ASSERT_TRUE(f.ok()) << f.error().message;
      bytes += fs::file_size(p);
      EXPECT_EQ(*f->get_u32(kSplitNo), k);
      EXPECT_EQ(*f->get_u32(kSplitCount), split->files.size());
      EXPECT_EQ(*f->get_u32("split.tensors.count"), 48u);
      EXPECT_EQ(f->find("general.architecture") != nullptr, k == 0) << p;
      if (max_tensors > 0) {
        EXPECT_LE(f->tensors().size(), 20u);
      }
      uint64_t data = 0;
      for (const auto& t : f->tensors()) data += (t.nbytes + 31) / 32 * 32;
      if (max_bytes > 0 && f->tensors().size() > 1) {
        EXPECT_LE(data, max_bytes) << p;
      }
    }
    EXPECT_EQ(split->bytes_out, bytes);
    auto back = quantize_gguf(split->files.back(), dir / "back.gguf", o);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(read(dir / "back.gguf"), read(dir / "whole.gguf"));
  }
}

TEST(QuantizeSplit, SplitInputGivesTheUnsplitFilesOutput) {
  const fs::path dir = test::make_temp_dir("quantize_split");
  const auto paths = split3(dir);
  QuantizeOptions o;
  o.ftype = *file_type_from_name("f16");  // stories260K's 172-wide FFN rows have no q8_0 blocks
  auto from_split = quantize_gguf(paths[1], dir / "split-f16.gguf", o);
  ASSERT_TRUE(from_split.ok()) << from_split.error().message;
  auto from_whole = quantize_gguf(test::stories260k(), dir / "whole-f16.gguf", o);
  ASSERT_TRUE(from_whole.ok()) << from_whole.error().message;
  EXPECT_EQ(from_split->tensors.size(), 48u);
  uint64_t bytes = 0;
  for (const fs::path& p : paths) bytes += fs::file_size(p);
  EXPECT_EQ(from_split->bytes_in, bytes);
  const auto read = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  // The split keys dropped, nothing else: the same bytes.
  EXPECT_EQ(read(dir / "split-f16.gguf"), read(dir / "whole-f16.gguf"));
  auto out = GgufFile::open(dir / "split-f16.gguf");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->find(kSplitCount), nullptr);
}

}  // namespace
}  // namespace glass::formats
