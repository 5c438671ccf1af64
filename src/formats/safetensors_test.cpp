// safetensors files and sharded checkpoints: valid ones read in place; each corrupt one (generated
// here in a temp dir) fails at open with a message naming the file and the problem; no byte-level
// damage crashes or reads out of bounds (the suite runs under ASan/UBSan).
#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "formats/safetensors_checkpoint.h"
#include "support/safetensors_writer.h"

namespace glass::formats {
namespace {

using test::SafetensorsWriter;

// Expects `r` to fail with `code` and a message containing every one of `parts`.
template <class T>
void expect_error(const Result<T>& r, std::initializer_list<std::string_view> parts,
                  ErrorCode code = ErrorCode::InvalidFile) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << *parts.begin() << "'";
  EXPECT_EQ(r.error().code, code) << r.error().message;
  for (auto p : parts)
    EXPECT_NE(r.error().message.find(p), std::string::npos)
        << "missing '" << p << "' in: " << r.error().message;
}

Result<SafetensorsFile> open_bytes(const std::vector<uint8_t>& bytes) {
  const auto dir = test::make_temp_dir("st_file");
  test::write_bytes(dir / "bad.safetensors", bytes);
  return SafetensorsFile::open(dir / "bad.safetensors");
}

SafetensorsWriter two_tensors() {
  SafetensorsWriter w;
  w.tensor_f32("a", {2, 3}, {1, 2, 3, 4, 5, 6}).tensor_f32("b", {2}, {7, 8}).metadata("format", "pt");
  return w;
}

TEST(Safetensors, ReadsTensorsInPlace) {
  auto f = open_bytes(two_tensors().build());
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tensors().size(), 2u);
  const SafetensorsTensor* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->graph_dtype, graph::DType::F32);
  EXPECT_EQ(a->nbytes, 24u);
  EXPECT_EQ(static_cast<const float*>(a->data)[5], 6.0f);
  EXPECT_EQ(static_cast<const float*>(f->find("b")->data)[1], 8.0f);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->find("c"), nullptr);
}

TEST(Safetensors, HalfTypesScalarsAndEmptyTensors) {
  SafetensorsWriter w;
  w.tensor({"ids", "I64", {1}, std::vector<uint8_t>(8, 0), std::nullopt})
      .tensor({"scalar", "F32", {}, {0, 0, 0x80, 0x3f}, std::nullopt})
      .tensor({"h", "F16", {2}, {0, 0x3c, 0, 0xc0}, std::nullopt})  // 1.0, -2.0
      .tensor({"bf", "BF16", {1}, {0x80, 0x3f}, std::nullopt})
      .tensor({"empty", "F32", {0, 4}, {}, std::nullopt});
  auto f = open_bytes(w.build());
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->find("h")->graph_dtype, graph::DType::F16);
  EXPECT_EQ(f->find("bf")->graph_dtype, graph::DType::BF16);
  EXPECT_TRUE(f->find("scalar")->shape.empty());
  EXPECT_EQ(f->find("empty")->nbytes, 0u);
  EXPECT_FALSE(f->find("ids")->graph_dtype.has_value());  // known, kept, not computable
}

TEST(SafetensorsMalformed, FileShorterThanTheLengthField) {
  expect_error(open_bytes({1, 2, 3}), {"bad.safetensors", "file has 3 bytes"});
}

TEST(SafetensorsMalformed, HeaderLengthPastEnd) {
  auto b = two_tensors().build();
  const uint64_t n = b.size();  // one more than fits
  std::memcpy(b.data(), &n, 8);
  expect_error(open_bytes(b), {"bad.safetensors", "header length", "runs past the end of the file"});
  const uint64_t huge = ~0ull;
  std::memcpy(b.data(), &huge, 8);
  expect_error(open_bytes(b), {"runs past the end of the file"});
}

TEST(SafetensorsMalformed, BadJson) {
  expect_error(open_bytes(SafetensorsWriter::from_header(R"({"a": {"dtype": "F32", )", {})),
               {"bad.safetensors", "header", "not valid JSON"});
  expect_error(open_bytes(SafetensorsWriter::from_header("[1, 2]", {})), {"does not start with '{'"});
  expect_error(open_bytes(SafetensorsWriter::from_header("", {})), {"does not start with '{'"});
  expect_error(open_bytes(SafetensorsWriter::from_header(R"({"a": 3})", {})),
               {"tensor 'a'", "not an object"});
  expect_error(open_bytes(SafetensorsWriter::from_header(R"({"__metadata__": {"k": 1}})", {})),
               {"__metadata__ 'k' is not a string"});
  // Deep nesting is refused before parsing (the parsed value would be walked recursively).
  std::string deep = R"({"a": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(open_bytes(SafetensorsWriter::from_header(deep, {})), {"header", "nested more than 128"});
}

TEST(SafetensorsMalformed, TensorListedTwice) {
  const std::string h = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                        R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  expect_error(open_bytes(SafetensorsWriter::from_header(h, std::vector<uint8_t>(8, 0))),
               {"key '/a' appears twice"});
}

TEST(SafetensorsMalformed, FieldsMissingOrMistyped) {
  const std::vector<uint8_t> data(4, 0);
  expect_error(
      open_bytes(SafetensorsWriter::from_header(R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", data)),
      {"tensor 'a'", "'dtype'"});
  expect_error(
      open_bytes(SafetensorsWriter::from_header(R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", data)),
      {"tensor 'a'", "'shape'"});
  expect_error(open_bytes(SafetensorsWriter::from_header(
                   R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", data)),
               {"tensor 'a'", "'data_offsets'"});
  expect_error(open_bytes(SafetensorsWriter::from_header(
                   R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", data)),
               {"tensor 'a'", "shape[0] is not a non-negative integer"});
  expect_error(open_bytes(SafetensorsWriter::from_header(
                   R"({"a": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", data)),
               {"shape[0]"});
  expect_error(open_bytes(SafetensorsWriter::from_header(
                   R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, -4]}})", data)),
               {"data_offsets are not non-negative integers"});
}

TEST(SafetensorsMalformed, UnknownDtype) {
  SafetensorsWriter w;
  w.tensor({"a", "F33", {1}, {0, 0, 0, 0}, std::nullopt});
  expect_error(open_bytes(w.build()), {"tensor 'a'", "unknown dtype 'F33'"});
  SafetensorsWriter sub;
  sub.tensor({"a", "F4", {2}, {0}, std::nullopt});
  expect_error(open_bytes(sub.build()), {"tensor 'a'", "F4"}, ErrorCode::Unsupported);
}

TEST(SafetensorsMalformed, DtypeShapeSpanMismatch) {
  SafetensorsWriter w;
  w.tensor({"a", "BF16", {2, 3}, std::vector<uint8_t>(24, 0), std::nullopt});  // needs 12 bytes
  expect_error(open_bytes(w.build()), {"tensor 'a'", "BF16 [2, 3] needs 12 bytes", "span 24"});
  SafetensorsWriter overflow;
  overflow.tensor({"a", "F32", {1ll << 40, 1ll << 40}, {0, 0, 0, 0}, std::nullopt});
  expect_error(open_bytes(overflow.build()), {"tensor 'a'", "overflows"});
}

TEST(SafetensorsMalformed, OffsetsOutsideTheFile) {
  SafetensorsWriter w;
  w.tensor({"a", "F32", {2}, {0, 0, 0, 0}, std::array<uint64_t, 2>{0, 8}});
  expect_error(open_bytes(w.build()), {"tensor 'a'", "run past the data buffer"});
  SafetensorsWriter back;
  back.tensor({"a", "F32", {0}, {}, std::array<uint64_t, 2>{4, 0}});
  expect_error(open_bytes(back.build()), {"tensor 'a'", "end before they begin"});
  SafetensorsWriter far;
  far.tensor({"a", "F32", {1}, {0, 0, 0, 0}, std::array<uint64_t, 2>{~0ull - 3, ~0ull}});
  expect_error(open_bytes(far.build()), {"tensor 'a'", "run past the data buffer"});
}

TEST(SafetensorsMalformed, OverlappingRanges) {
  SafetensorsWriter w;
  w.tensor({"a", "F32", {2}, std::vector<uint8_t>(8, 0), std::array<uint64_t, 2>{0, 8}})
      .tensor({"b", "F32", {2}, std::vector<uint8_t>(8, 0), std::array<uint64_t, 2>{4, 12}});
  expect_error(open_bytes(w.build()), {"tensors 'a'", "'b'", "overlap"});
  // Identical ranges overlap too.
  SafetensorsWriter same;
  same.tensor({"a", "F32", {1}, std::vector<uint8_t>(4, 0), std::array<uint64_t, 2>{0, 4}})
      .tensor({"b", "F32", {1}, {}, std::array<uint64_t, 2>{0, 4}});
  expect_error(open_bytes(same.build()), {"overlap"});
}

TEST(SafetensorsMalformed, MisalignedData) {
  SafetensorsWriter w;
  w.tensor({"pad", "U8", {1}, {0}, std::nullopt}).tensor({"a", "F32", {1}, {0, 0, 0, 0}, std::nullopt});
  expect_error(open_bytes(w.build()), {"tensor 'a'", "not aligned"}, ErrorCode::Unsupported);
}

// Truncation at every length and every single-byte overwrite either parse or fail cleanly.
TEST(SafetensorsMalformed, ByteDamageNeverCrashes) {
  const auto good = two_tensors().build();
  for (size_t n = 0; n < good.size(); ++n) {
    auto f = open_bytes(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)));
    EXPECT_FALSE(f.ok()) << "truncated to " << n;
  }
  for (size_t i = 0; i < good.size(); i += 3) {
    for (uint8_t v : {uint8_t{0}, uint8_t{0xff}, uint8_t{'"'}, uint8_t{'9'}}) {
      auto b = good;
      b[i] = v;
      (void)open_bytes(b);
    }
  }
}

// Sharded checkpoints.

const char* kIndex = R"({"metadata": {"total_size": 32}, "weight_map": {
  "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
  "c": "model-00002-of-00002.safetensors"}})";

std::filesystem::path sharded_dir(std::string_view name, std::string_view index = kIndex) {
  const auto dir = test::make_temp_dir(name);
  SafetensorsWriter s1, s2;
  s1.zeros_f32("a", {2, 2}).zeros_f32("b", {2});
  s2.zeros_f32("c", {2});
  test::write_bytes(dir / "model-00001-of-00002.safetensors", s1.build());
  test::write_bytes(dir / "model-00002-of-00002.safetensors", s2.build());
  test::write_text(dir / kSafetensorsIndex, index);
  return dir;
}

TEST(SafetensorsCheckpoint, ShardedIndex) {
  auto c = SafetensorsCheckpoint::open(sharded_dir("sharded_ok"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->shards().size(), 2u);
  ASSERT_EQ(c->tensors().size(), 3u);
  EXPECT_EQ(c->tensors().at("c")->shape, (std::vector<int64_t>{2}));
}

TEST(SafetensorsCheckpoint, SingleFileFirst) {
  const auto dir = test::make_temp_dir("single");
  test::write_bytes(dir / kSafetensorsSingle, two_tensors().build());
  auto c = SafetensorsCheckpoint::open(dir);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tensors().size(), 2u);
}

TEST(SafetensorsCheckpoint, DirectoryWithoutWeights) {
  const auto dir = test::make_temp_dir("no_weights");
  test::write_text(dir / "pytorch_model.bin", "x");
  expect_error(SafetensorsCheckpoint::open(dir), {"no *.safetensors"});
  test::write_bytes(dir / "consolidated.safetensors", two_tensors().build());
  expect_error(SafetensorsCheckpoint::open(dir), {"consolidated.safetensors", "neither model.safetensors"});
}

TEST(SafetensorsCheckpointMalformed, IndexNamesMissingShards) {
  const auto dir = sharded_dir("missing_shard", R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
      "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00003.safetensors",
      "d": "model-00003-of-00003.safetensors"}})");
  expect_error(SafetensorsCheckpoint::open(dir), {"2 of 3 shard files", "model-00002-of-00003.safetensors",
                                                  "model-00003-of-00003.safetensors"});
}

TEST(SafetensorsCheckpointMalformed, TensorListedTwiceInWeightMap) {
  const auto dir = sharded_dir("listed_twice", R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
      "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors",
      "a": "model-00002-of-00002.safetensors"}})");
  expect_error(SafetensorsCheckpoint::open(dir), {kSafetensorsIndex, "'/weight_map/a' appears twice"});
}

TEST(SafetensorsCheckpointMalformed, TensorStoredInTwoShards) {
  const auto dir = sharded_dir("stored_twice");
  SafetensorsWriter s2;
  s2.zeros_f32("c", {2}).zeros_f32("a", {2, 2});
  test::write_bytes(dir / "model-00002-of-00002.safetensors", s2.build());
  expect_error(SafetensorsCheckpoint::open(dir), {"'a' is stored twice"});
}

TEST(SafetensorsCheckpointMalformed, AllCoverageProblemsAtOnce) {
  const auto dir = sharded_dir("coverage", R"({"weight_map": {"a": "model-00002-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors", "ghost": "model-00001-of-00002.safetensors"}})");
  expect_error(SafetensorsCheckpoint::open(dir),
               {"3 problems", "'a' is in model-00001-of-00002.safetensors but weight_map says model-00002",
                "'b' in model-00001-of-00002.safetensors is not listed", "'ghost' is listed for"});
}

TEST(SafetensorsCheckpointMalformed, TotalSizeInconsistent) {
  const auto dir = sharded_dir("total_size", R"({"metadata": {"total_size": 33}, "weight_map": {
      "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})");
  expect_error(SafetensorsCheckpoint::open(dir), {"total_size is 33", "hold 32 bytes"});
}

TEST(SafetensorsCheckpointMalformed, ShardNameLeavesTheDirectory) {
  const auto dir = sharded_dir("escape", R"({"weight_map": {"a": "../model-00001-of-00002.safetensors"}})");
  expect_error(SafetensorsCheckpoint::open(dir), {"not a plain file name"});
}

TEST(SafetensorsCheckpointMalformed, IndexNotJson) {
  expect_error(SafetensorsCheckpoint::open(sharded_dir("index_json", "{\"weight_map\": ")),
               {"not valid JSON"});
  expect_error(SafetensorsCheckpoint::open(sharded_dir("index_map", R"({"weight_map": []})")),
               {"'weight_map' is missing or not an object"});
}

TEST(SafetensorsCheckpointMalformed, CorruptShardNamesItsFile) {
  const auto dir = sharded_dir("corrupt_shard");
  test::write_bytes(dir / "model-00002-of-00002.safetensors", {9, 0, 0, 0, 0, 0, 0, 0, '{'});
  expect_error(SafetensorsCheckpoint::open(dir), {"model-00002-of-00002.safetensors", "runs past the end"});
}

}  // namespace
}  // namespace glass::formats
