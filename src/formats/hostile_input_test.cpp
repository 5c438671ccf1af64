// Hostile input across the formats module (issue 29), each class with its generated inputs: files
// that are not regular files (a FIFO, /dev/zero, a directory) refused before any read can block or
// fill memory; JSON nested deeper than the readers' recursion may go; JSON whose parsed form would
// cost many times its text; a token list larger than the embedding it indexes; output files never
// written through a planted symlink or left behind half-written. Memory is asserted through the
// allocation counters (support/counting_new.h), never through time.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <system_error>

#include "core/exception_guard.h"
#include "core/read_file.h"
#include "formats/gguf.h"
#include "formats/gguf_vocab.h"
#include "formats/gguf_writer.h"
#include "formats/hf_config.h"
#include "formats/json_strict.h"
#include "formats/mapped_file.h"
#include "formats/npy.h"
#include "formats/safetensors.h"
#include "formats/safetensors_checkpoint.h"
#include "support/counting_new.h"
#include "support/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("hostile-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void expect_error(const Error& e, ErrorCode code, std::initializer_list<std::string_view> parts) {
  EXPECT_EQ(e.code, code) << e.message;
  for (std::string_view p : parts)
    EXPECT_NE(e.message.find(p), std::string::npos) << "'" << p << "' not in: " << e.message;
}

// The memory rule for a rejected input of `input_bytes`: at most twice its size + 64 MiB.
uint64_t memory_bound(uint64_t input_bytes) { return 2 * input_bytes + (uint64_t{64} << 20); }

// Reads the GGUF's vocabulary (`check` looks at it) and builds its tokenizer, which must be refused
// with an InvalidArgument naming `parts`, all within memory_bound of the file's size; then removes
// the file.
void expect_vocabulary_refused_within_bound(const fs::path& path,
                                            const std::function<void(const tokenizer::Vocab&)>& check,
                                            std::initializer_list<std::string_view> parts) {
  const uint64_t size = fs::file_size(path);
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  {
    Result<GgufFile> file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    Result<tokenizer::Vocab> vocab = vocab_from_gguf(*file);
    ASSERT_TRUE(vocab.ok()) << vocab.error().message;
    check(*vocab);
    Result<tokenizer::Tokenizer> t = tokenizer::Tokenizer::create(std::move(vocab).value());
    ASSERT_FALSE(t.ok());
    expect_error(t.error(), ErrorCode::InvalidArgument, parts);
  }
  EXPECT_LE(test::peak_bytes() - before, memory_bound(size))
      << "peak " << test::peak_bytes() - before << " bytes for a " << size << "-byte file";
  fs::remove(path);
}

// --- every file read bounded -------------------------------------------------------------------

TEST(HostileFiles, FifoIsRefusedBeforeReading) {
  const fs::path dir = fresh_dir("fifo");
  const fs::path fifo = dir / "config.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: a reader that opened it blocking would hang here.
  auto text = read_file_bounded(fifo, 1 << 20, "test");
  ASSERT_FALSE(text.ok());
  expect_error(text.error(), ErrorCode::Io, {"config.json", "not a regular file"});
  auto mapped = MappedFile::open(fifo);
  ASSERT_FALSE(mapped.ok());
  expect_error(mapped.error(), ErrorCode::Io, {"config.json", "not a regular file"});
  auto config = HfConfig::open(dir);
  ASSERT_FALSE(config.ok());
  expect_error(config.error(), ErrorCode::Io, {"config.json", "not a regular file"});
  const fs::path index = dir / kSafetensorsIndex;
  ASSERT_EQ(::mkfifo(index.c_str(), 0600), 0);
  auto checkpoint = SafetensorsCheckpoint::open_index(index);
  ASSERT_FALSE(checkpoint.ok());
  expect_error(checkpoint.error(), ErrorCode::Io, {kSafetensorsIndex, "not a regular file"});
}

TEST(HostileFiles, DevicesAndDirectoriesAreRefused) {
  // /dev/zero would read forever; a directory would read as nothing or fail late.
  for (const char* p : {"/dev/zero", "/dev/null"}) {
    auto text = read_file_bounded(p, 1 << 20, "test");
    ASSERT_FALSE(text.ok()) << p;
    expect_error(text.error(), ErrorCode::Io, {p, "not a regular file"});
    EXPECT_FALSE(MappedFile::open(p).ok()) << p;
    EXPECT_FALSE(GgufFile::open(p).ok()) << p;
    EXPECT_FALSE(SafetensorsFile::open(p).ok()) << p;
    EXPECT_FALSE(read_npy_f32(p).ok()) << p;
  }
  const fs::path dir = fresh_dir("dir");
  auto text = read_file_bounded(dir, 1 << 20, "test");
  ASSERT_FALSE(text.ok());
  expect_error(text.error(), ErrorCode::Io, {"not a regular file"});
}

TEST(HostileFiles, SizeLimitIsEnforcedBeforeReading) {
  const fs::path dir = fresh_dir("size");
  write(dir / "big.json", std::string(4096, ' '));
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  auto text = read_file_bounded(dir / "big.json", 1000, "test");
  ASSERT_FALSE(text.ok());
  expect_error(text.error(), ErrorCode::CapacityExceeded, {"big.json", "4096 bytes", "1000"});
  EXPECT_LT(test::peak_bytes() - before, 4096u) << "the file was read before its size was checked";
  auto ok = read_file_bounded(dir / "big.json", 4096, "test");
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->size(), 4096u);
}

// --- recursion bounded where input controls depth ----------------------------------------------

TEST(HostileJson, DeepNestingIsAnErrorNamingTheFile) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto j = parse_json_strict(deep, "deep.json");
  ASSERT_FALSE(j.ok());
  expect_error(j.error(), ErrorCode::InvalidFile, {"deep.json", "nested more than 128"});
  // Brackets inside strings are text, not nesting.
  const std::string in_string = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_TRUE(parse_json_strict(in_string, "s.json").ok());
  const std::string escaped = "{\"a\": \"\\\"[[[\", \"b\": [[1]]}";
  EXPECT_TRUE(parse_json_strict(escaped, "e.json").ok());

  // The same through each reader: config.json, the shard index, a safetensors header.
  const std::string deep_object =
      "{\"model_type\": \"llama\", \"x\": " + std::string(5000, '[') + std::string(5000, ']') + "}";
  auto config = HfConfig::parse(deep_object, "", "dir");
  ASSERT_FALSE(config.ok());
  expect_error(config.error(), ErrorCode::InvalidFile, {"config.json", "nested"});
  const fs::path dir = fresh_dir("deep");
  std::string objects;  // {"a":{"a":...1}}: nested objects that are JSON, so only the depth is wrong
  for (int i = 0; i < 5000; ++i) objects += "{\"a\":";
  write(dir / kSafetensorsIndex, "{\"weight_map\": " + objects + "1" + std::string(5000, '}') + "}");
  auto index = SafetensorsCheckpoint::open_index(dir / kSafetensorsIndex);
  ASSERT_FALSE(index.ok());
  expect_error(index.error(), ErrorCode::InvalidFile, {kSafetensorsIndex, "nested"});
  std::string header = "{\"a\": " + std::string(3000, '[') + std::string(3000, ']') + "}";
  std::string st(8, '\0');
  for (int i = 0; i < 8; ++i) st[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  st += header;
  auto file = SafetensorsFile::parse(
      MappedFile::from_bytes("deep.safetensors", std::vector<uint8_t>(st.begin(), st.end())));
  ASSERT_FALSE(file.ok());
  expect_error(file.error(), ErrorCode::InvalidFile, {"deep.safetensors", "nested"});
}

// --- memory bounded on rejected input ----------------------------------------------------------

TEST(HostileJson, ParsedSizeIsBoundedWhileParsing) {
  // 16 MiB of "0," parse to 8M values of 16 bytes (128 MiB) plus the vector growth: the budget
  // (text + 16 MiB) stops the parse, and the whole attempt stays under the memory rule.
  std::string text = "{\"a\": [";
  for (int i = 0; i < (8 << 20); ++i) text += "0,";
  text += "0]}";
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  auto j = parse_json_strict(text, "wide.json");
  ASSERT_FALSE(j.ok());
  expect_error(j.error(), ErrorCode::CapacityExceeded, {"wide.json", "memory"});
  EXPECT_LE(test::peak_bytes() - before, memory_bound(text.size()));
  // A real-sized document passes: a 1 MiB header of tensor entries.
  std::string header = "{";
  for (int i = 0; i < 5000; ++i)
    header += "\"model.layers." + std::to_string(i) +
              ".weight\": {\"dtype\": \"F32\", \"shape\": [4096, 4096], "
              "\"data_offsets\": [0, 0]},";
  header += "\"x\": 1}";
  EXPECT_TRUE(parse_json_strict(header, "header.json").ok());
}

// A safetensors header of a million tensor entries: refused for its parsed size within the memory
// rule. (nlohmann's callback parser, which the strict reader used, scanned an object's members each
// time one of them ended: rejecting this 84 MB header took 276 s; the reader builds its DOM from
// the SAX events itself now.) Every entry is parsed: a repeated name at the end is still found.
TEST(HostileJson, MillionsOfObjectMembersAreRefusedWithinTheBound) {
  std::string text = "{";
  for (int i = 0; i < 1000000; ++i)
    text += fmt::format(R"("model.layers.{}.w":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}},)", i,
                        4 * i, 4 * i + 4);
  text += "\"x\": 1}";
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  auto j = parse_json_strict(text, "model.safetensors: header");
  ASSERT_FALSE(j.ok());
  expect_error(j.error(), ErrorCode::CapacityExceeded, {"model.safetensors: header", "memory"});
  EXPECT_LE(test::peak_bytes() - before, memory_bound(text.size()));
  // A shard index's weight map of a million names: its parsed size counted as malloc lays it out
  // (string blocks, node chunks; the keys not copied for the duplicate check): 247 MB of RSS for
  // this 58 MiB file before, against the 180 MiB the rule allows.
  std::string index = R"({"metadata": {"total_size": 4000000}, "weight_map": {)";
  for (int i = 0; i < 1000000; ++i)
    index += fmt::format(R"({}"model.layers.{}.w": "model-0000{}-of-00002.safetensors")", i == 0 ? "" : ",",
                         i, 1 + i % 2);
  index += "}}";
  test::reset_peak_bytes();
  const uint64_t index_before = test::live_bytes();
  auto w = parse_json_strict(index, "model.safetensors.index.json");
  ASSERT_FALSE(w.ok());
  expect_error(w.error(), ErrorCode::CapacityExceeded, {"model.safetensors.index.json", "memory"});
  EXPECT_LE(test::peak_bytes() - index_before, memory_bound(index.size()) - index.size());
  // Within the budget, the last of 20000 entries repeating the first is the error that names it.
  std::string dup = "{";
  for (int i = 0; i < 20000; ++i) dup += fmt::format(R"("t{}":{{"shape":[1]}},)", i);
  dup += R"("t0": 1})";
  auto d = parse_json_strict(dup, "header");
  ASSERT_FALSE(d.ok());
  expect_error(d.error(), ErrorCode::InvalidFile, {"key '/t0' appears twice"});
}

TEST(HostileGguf, TokenListLargerThanTheEmbeddingIsRejectedBeforeBuildingIt) {
  // 4 MiB of empty token strings (8 bytes each in the file, ~100 bytes each as a vocabulary) for an
  // embedding of 4 rows: rejected from the counts alone.
  test::GgufWriter w;
  w.kv("tokenizer.ggml.model", test::GgufWriter::string("llama"));
  w.kv("tokenizer.ggml.tokens", test::GgufWriter::array_header(test::GgufWriter::kString, 1 << 19,
                                                               std::vector<uint8_t>((1 << 19) * 8, 0)));
  w.tensor_f32("token_embd.weight", {4, 8}, std::vector<float>(32, 0.5f));
  const auto bytes = w.build().bytes;
  auto file = GgufFile::parse(MappedFile::from_bytes("big-vocab.gguf", bytes));
  ASSERT_TRUE(file.ok()) << file.error().message;
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  auto vocab = vocab_from_gguf(*file);
  ASSERT_FALSE(vocab.ok());
  expect_error(vocab.error(), ErrorCode::InvalidFile,
               {"big-vocab.gguf", "tokenizer.ggml.tokens", "524288 tokens", "token_embd.weight", "4 rows"});
  EXPECT_LE(test::peak_bytes() - before, uint64_t{1} << 20);
}

TEST(HostileGguf, EntriesAtTheCountLimitsCostBoundedMemory) {
  // The most metadata entries and tensor infos the reader takes, each as small as its encoding
  // allows: their parsed form must stay within the rule for the file's size.
  for (const bool tensors : {false, true}) {
    test::GgufWriter w;
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      const std::string name = fmt::format("k{}", i);
      if (tensors)
        w.tensor({name, {1}, test::GgufWriter::kTF32, {}, 0});
      else
        w.kv(name, test::GgufWriter::u8(1));
    }
    const auto bytes = w.build().bytes;
    auto mapped = MappedFile::from_bytes("many.gguf", bytes);
    test::reset_peak_bytes();
    const uint64_t before = test::live_bytes();
    auto file = GgufFile::parse(mapped);
    // Tensors all at offset 0 with 4 bytes each overlap: rejected, after the directory was read.
    EXPECT_EQ(file.ok(), !tensors) << (file.ok() ? "" : file.error().message);
    EXPECT_LE(test::peak_bytes() - before, memory_bound(bytes.size())) << (tensors ? "tensors" : "metadata");
  }
}

// --- output files written safely --------------------------------------------------------------

// A file someone else owns, which a planted symlink points at.
struct Victim {
  fs::path dir, path;
  explicit Victim(const std::string& name) : dir(fresh_dir(name)), path(dir / "victim.txt") {
    write(path, "precious");
  }
  // Symlinks under every name a writer of `target` could have used before: "<target>.tmp" and the
  // target itself.
  void plant(const fs::path& target) const {
    fs::path tmp = target;
    tmp += ".tmp";
    fs::create_symlink(path, tmp);
    fs::create_symlink(path, target);
  }
  bool intact() const { return read(path) == "precious"; }
  // Files in the directory other than the victim, the target and its planted symlink.
  std::vector<std::string> leftovers(const fs::path& target) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (n != "victim.txt" && n != target.filename().string() && n != target.filename().string() + ".tmp")
        out.push_back(n);
    }
    return out;
  }
};

TEST(HostileOutput, GgufWriterNeverWritesThroughASymlink) {
  Victim v("gguf-out");
  const fs::path target = v.dir / "out.gguf";
  v.plant(target);
  auto w = GgufWriter::create(target, {}, {{"t", {4}, graph::DType::F32}}, 32);
  ASSERT_TRUE(w.ok()) << w.error().message;
  const float data[4] = {1, 2, 3, 4};
  ASSERT_TRUE(w->write(data, sizeof(data)).ok());
  ASSERT_TRUE(w->finish().ok());
  EXPECT_TRUE(v.intact());
  EXPECT_FALSE(fs::is_symlink(target));  // the link was replaced by the file, its target untouched
  EXPECT_TRUE(GgufFile::open(target).ok());
  EXPECT_TRUE(v.leftovers(target).empty());
}

TEST(HostileOutput, UnfinishedGgufLeavesNothing) {
  Victim v("gguf-unfinished");
  const fs::path target = v.dir / "out.gguf";
  {
    auto w = GgufWriter::create(target, {}, {{"t", {4}, graph::DType::F32}}, 32);
    ASSERT_TRUE(w.ok()) << w.error().message;
    const float data[2] = {1, 2};
    ASSERT_TRUE(w->write(data, sizeof(data)).ok());
    auto s = w->finish();  // two of four floats
    ASSERT_FALSE(s.ok());
    expect_error(s.error(), ErrorCode::InvalidArgument, {"tensor 't'"});
  }
  EXPECT_FALSE(fs::exists(target));
  EXPECT_TRUE(v.leftovers(target).empty());
  // A directory as the output: an error before anything is written, nothing left behind.
  auto d = GgufWriter::create(v.dir, {}, {{"t", {4}, graph::DType::F32}}, 32);
  ASSERT_FALSE(d.ok());
  expect_error(d.error(), ErrorCode::Io, {"is a directory"});
  auto missing =
      GgufWriter::create(v.dir / "no-such-dir" / "x.gguf", {}, {{"t", {4}, graph::DType::F32}}, 32);
  ASSERT_FALSE(missing.ok());
  expect_error(missing.error(), ErrorCode::Io, {"x.gguf"});
  EXPECT_TRUE(v.leftovers(target).empty());
}

TEST(HostileOutput, NpyWriterNeverWritesThroughASymlink) {
  Victim v("npy-out");
  const fs::path target = v.dir / "out.npy";
  v.plant(target);
  const float data[3] = {1, 2, 3};
  ASSERT_TRUE(write_npy_f32(target, data, {3}).ok());
  EXPECT_TRUE(v.intact());
  auto back = read_npy_f32(target);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->data, std::vector<float>({1, 2, 3}));
  EXPECT_TRUE(v.leftovers(target).empty());
}

TEST(HostileOutput, NpyParsesFromMemoryAsFromAFile) {
  const float data[2] = {5, 6};
  const fs::path p = fresh_dir("npy-mem") / "x.npy";
  ASSERT_TRUE(write_npy_f32(p, data, {2}).ok());
  const std::string bytes = read(p);
  auto a = parse_npy_f32(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), "mem.npy");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->data, std::vector<float>({5, 6}));
  auto bad =
      parse_npy_f32(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), 9), "cut.npy");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cut.npy"), std::string::npos) << bad.error().message;
}

// --- no exception escapes ----------------------------------------------------------------------

TEST(ExceptionGuard, ExceptionsBecomeTypedErrors) {
  auto oom = guarded("load: m.gguf", []() -> Status { throw std::bad_alloc(); });
  ASSERT_FALSE(oom.ok());
  expect_error(oom.error(), ErrorCode::CapacityExceeded, {"load: m.gguf", "out of memory"});
  auto len = guarded("x", []() -> Result<int> { return static_cast<int>(std::vector<int>().at(3)); });
  ASSERT_FALSE(len.ok());
  EXPECT_EQ(len.error().code, ErrorCode::Internal);
  auto sys = guarded("session",
                     []() -> Status { throw std::system_error(std::make_error_code(std::errc::io_error)); });
  ASSERT_FALSE(sys.ok());
  expect_error(sys.error(), ErrorCode::Io, {"session"});
  auto big = guarded("y", []() -> Status { throw std::length_error("vector::reserve"); });
  ASSERT_FALSE(big.ok());
  expect_error(big.error(), ErrorCode::CapacityExceeded, {"y", "vector::reserve"});
  auto fine = guarded("z", []() -> Result<int> { return 7; });
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(*fine, 7);
}

// Millions of merges naming no token: read as views into the mapping and refused at the first,
// within the bound (they were copied twice, as strings and as string pairs: ~200 MB for 33 MB).
TEST(HostileFiles, GgufMillionsOfMergesStayWithinTheBound) {
  test::GgufWriter w;
  w.kv("general.architecture", test::GgufWriter::string("llama"));
  w.kv("tokenizer.ggml.model", test::GgufWriter::string("gpt2"));
  w.kv("tokenizer.ggml.tokens", test::GgufWriter::string_array({"x"}));
  w.kv("tokenizer.ggml.merges", test::GgufWriter::string_array(std::vector<std::string>(2000000, "a b")));
  expect_vocabulary_refused_within_bound(
      test::write_temp_file(w.build().bytes, "hostile-merges.gguf"),
      [](const tokenizer::Vocab& v) { EXPECT_EQ(v.merges.size(), 2000000u); },
      {"merge 0 ('a' 'b')", "not in the vocabulary"});
}

// Millions of short tokens: the file's string array is read in place (4 bytes an element), the
// vocabulary packs the texts in one buffer and the index reads that buffer. Strings and views per
// token took 270 MB for this 47 MB file; a merge naming no token refuses it at the end.
TEST(HostileFiles, GgufMillionsOfTokensStayWithinTheBound) {
  fs::path path;
  {
    test::GgufWriter w;
    w.kv("general.architecture", test::GgufWriter::string("llama"));
    w.kv("tokenizer.ggml.model", test::GgufWriter::string("gpt2"));
    std::vector<std::string> tokens = {"a", "b", "ab"};
    for (int i = 0; i < 3000000; ++i) tokens.push_back(fmt::format("t{}", i));
    w.kv("tokenizer.ggml.tokens", test::GgufWriter::string_array(tokens));
    w.kv("tokenizer.ggml.merges", test::GgufWriter::string_array({"a c"}));
    path = test::write_temp_file(w.build().bytes, "hostile-tokens.gguf");
  }
  expect_vocabulary_refused_within_bound(path,
                                         [](const tokenizer::Vocab& v) {
                                           ASSERT_EQ(v.tokens.size(), 3000003u);
                                           EXPECT_EQ(v.tokens[2], "ab");
                                           EXPECT_EQ(v.tokens.back(), "t2999999");
                                         },
                                         {"merge 0 ('a' 'c')", "not in the vocabulary"});
}

}  // namespace
}  // namespace glass::formats
