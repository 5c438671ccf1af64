// Malformed tokenizer.json / tokenizer_config.json files: each gives an error naming what is wrong
// (InvalidFile, or Unsupported for components glass does not implement), never a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

namespace glass::tokenizer {
namespace {

using Json = nlohmann::json;

Json minimal() {
  return {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}}}, {"merges", {"a b"}}}}};
}

void expect_error(const std::string& json, ErrorCode code, const std::string& needle,
                  const std::string& config = "") {
  Result<Tokenizer> t = hf_tokenizer_from_json(json, config);
  ASSERT_FALSE(t.ok()) << needle;
  EXPECT_EQ(t.error().code, code) << t.error().message;
  EXPECT_NE(t.error().message.find(needle), std::string::npos) << t.error().message;
}
void expect_error(const Json& j, ErrorCode code, const std::string& needle) {
  expect_error(j.dump(), code, needle);
}

TEST(HfMalformed, TheMinimalFileLoads) {
  Result<Tokenizer> t = hf_tokenizer_from_json(minimal().dump(), "");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("ab", false, false).value(), std::vector<int32_t>{2});
}

TEST(HfMalformed, NotJson) {
  expect_error(std::string("{\"model\": "), ErrorCode::InvalidFile, "tokenizer.json: not valid JSON");
  expect_error(std::string("[1, 2]"), ErrorCode::InvalidFile, "expected an object");
  expect_error(minimal().dump(), ErrorCode::InvalidFile, "tokenizer_config.json: not valid JSON", "{oops");
}

TEST(HfMalformed, InvalidUtf8InTheVocabulary) {
  std::string text = minimal().dump();
  text.replace(text.find("\"ab\""), 4, "\"a\xFF\"");
  expect_error(text, ErrorCode::InvalidFile, "not valid JSON");
  expect_error(text, ErrorCode::InvalidFile, "UTF-8");
}

TEST(HfMalformed, MissingOrBadMerges) {
  Json j = minimal();
  j["model"].erase("merges");
  expect_error(j, ErrorCode::InvalidFile, "model.merges: missing or not a list");
  j = minimal();
  j["model"]["merges"] = {"a b c"};
  expect_error(j, ErrorCode::InvalidFile, "model.merges[0]: 'a b c' is not two tokens");
  j["model"]["merges"] = {Json::array({"a"})};
  expect_error(j, ErrorCode::InvalidFile, "model.merges[0]: expected");
  j["model"]["merges"] = {"a z"};
  expect_error(j, ErrorCode::InvalidArgument, "merge 0 ('a' 'z'): 'z' is not in the vocabulary");
  j["model"]["merges"] = {"b a"};  // "ba" is not a token
  expect_error(j, ErrorCode::InvalidArgument, "'ba' is not in the vocabulary");
}

TEST(HfMalformed, IdsOutOfRange) {
  Json j = minimal();
  j["model"]["vocab"]["c"] = -1;
  expect_error(j, ErrorCode::InvalidFile, "model.vocab: 'c': id -1 is out of range");
  j["model"]["vocab"]["c"] = 4000000000LL;
  expect_error(j, ErrorCode::InvalidFile, "is out of range");
  j["model"]["vocab"]["c"] = 100000000;  // a huge gap: refused before anything is allocated for it
  expect_error(j, ErrorCode::InvalidFile, "token id 100000000 is out of range for a vocabulary of 4 tokens");
  j["model"]["vocab"]["c"] = "3";
  expect_error(j, ErrorCode::InvalidFile, "'c': the id is not an integer");
  j = minimal();
  j["model"]["vocab"]["c"] = 1;
  expect_error(j, ErrorCode::InvalidFile, "have the same id 1");
  j = minimal();
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 9}}, {"cls", {"<s>", 0}}};
  expect_error(j, ErrorCode::InvalidArgument, "added special token 9 is out of range [0, 3)");
  j = minimal();
  j["post_processor"] = {
      {"type", "TemplateProcessing"}, {"single", {"<s>", "$A"}}, {"special_tokens", Json::object()}};
  expect_error(j, ErrorCode::InvalidFile, "special token '<s>' is not in special_tokens");
}

TEST(HfMalformed, BadFieldsNameTheirPath) {
  Json j = minimal();
  j["model"]["unk_token"] = "<unk>";
  expect_error(j, ErrorCode::InvalidFile, "model.unk_token: '<unk>' is not in the vocabulary");
  j = minimal();
  j["model"]["byte_fallback"] = "yes";
  expect_error(j, ErrorCode::InvalidFile, "model: 'byte_fallback' must be true or false");
  j = minimal();
  j["added_tokens"] = {{{"id", 3}, {"special", true}}};
  expect_error(j, ErrorCode::InvalidFile, "added_tokens[0]: 'content' is missing");
  j = minimal();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", "("}}}}}}};
  expect_error(j, ErrorCode::InvalidFile, "pre_tokenizer.pretokenizers[0]");
  j = minimal();
  j["decoder"] = {{"type", "Strip"}, {"content", "ab"}};
  expect_error(j, ErrorCode::InvalidFile, "decoder: 'content' must be one character");
  expect_error(minimal().dump(), ErrorCode::InvalidFile,
               "tokenizer_config.json: 'add_bos_token' must be true or false", R"({"add_bos_token": "yes"})");
}

TEST(HfMalformed, UnsupportedComponentsAreNamed) {
  Json j = minimal();
  j["model"]["type"] = "Unigram";
  expect_error(j, ErrorCode::Unsupported, "model: type 'Unigram' is not supported");
  j = minimal();
  j["model"]["dropout"] = 0.1;
  expect_error(j, ErrorCode::Unsupported, "dropout");
  j = minimal();
  j["decoder"] = {{"type", "CTC"}};
  expect_error(j, ErrorCode::Unsupported, "decoder: type 'CTC' is not supported");
  j = minimal();
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {{{"type", "Nmt"}}}}};
  expect_error(j, ErrorCode::Unsupported, "normalizer.normalizers[0]: type 'Nmt' is not supported");
}

TEST(HfMalformed, FilesAreReadWithClearErrors) {
  Result<Tokenizer> t = load_hf_tokenizer("/nonexistent/dir/tokenizer.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::Io);
  EXPECT_NE(t.error().message.find("/nonexistent/dir/tokenizer.json"), std::string::npos)
      << t.error().message;
}

// Issue 29: the readers of normalizer / pre-tokenizer / decoder sequences recurse with the nesting,
// so nesting past the bound (core/json_depth.h) is an error before anything is parsed, wherever it is.
TEST(HfMalformed, DeepNestingIsAnError) {
  // A Sequence of Sequences 100000 deep, as text: building it as a Json would need the recursion.
  std::string nested;
  for (int i = 0; i < 100000; ++i) nested += R"({"type": "Sequence", "normalizers": [)";
  nested += R"({"type": "NFC"})";
  for (int i = 0; i < 100000; ++i) nested += "]}";
  std::string text = minimal().dump();
  text.insert(text.size() - 1, ", \"normalizer\": " + nested);
  expect_error(text, ErrorCode::InvalidFile, "nested more than 128");
  // In tokenizer_config.json too, and in plain arrays.
  expect_error(minimal().dump(), ErrorCode::InvalidFile, "tokenizer_config.json: JSON nested",
               "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  // Ten levels (real files use three or four) still load.
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += R"({"type": "Sequence", "normalizers": [)";
  ten += R"({"type": "NFC"})";
  for (int i = 0; i < 10; ++i) ten += "]}";
  std::string ok = minimal().dump();
  ok.insert(ok.size() - 1, ", \"normalizer\": " + ten);
  Result<Tokenizer> t = hf_tokenizer_from_json(ok, "");
  EXPECT_TRUE(t.ok()) << t.error().message;
}

// A FIFO named tokenizer.json is refused without waiting for a writer; so is /dev/zero.
TEST(HfMalformed, NonRegularFilesAreRefused) {
  const auto dir = std::filesystem::path(::testing::TempDir()) / ("hf-fifo-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "tokenizer.json").c_str(), 0600), 0);
  Result<Tokenizer> t = load_hf_tokenizer(dir);
  std::filesystem::remove_all(dir);  // the FIFO too: nothing left in the temporary folder
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::Io);
  EXPECT_NE(t.error().message.find("tokenizer.json: not a regular file"), std::string::npos)
      << t.error().message;
  Result<Tokenizer> z = load_hf_tokenizer("/dev/zero");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("not a regular file"), std::string::npos) << z.error().message;
}

}  // namespace
}  // namespace glass::tokenizer
