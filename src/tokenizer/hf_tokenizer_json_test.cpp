// tokenizer.json read without a DOM of its vocabulary, merges and added tokens
// (hf_tokenizer_json.h): what the lists hold, the DOM semantics they keep (the last of repeated keys,
// errors naming the entry a DOM's sorted iteration met first), and the memory a large file costs
// while it loads, counted by the test binary's operator new (support/counting_new.h): the peak stays
// within the text's size + 64 MiB on top of the text (issue 29: at most 2x the input + 64 MiB in all).
#include "tokenizer/hf_tokenizer_json.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_set>
#include <vector>

#include "support/counting_new.h"
#include "support/fixtures.h"
#include "tokenizer/hf_tokenizer.h"

namespace glass::tokenizer {
namespace {

using Json = nlohmann::json;

// A byte-level-BPE-shaped tokenizer.json with `n` merges: 64 one-character tokens, then each token
// one earlier token plus a character (merge "<earlier> <char>"), as real vocabularies grow; half the
// merges as "a b" strings, half as ["a", "b"] pairs (both forms exist in the wild). Tokens average
// ~12 bytes, as Llama 3's do.
std::string large_tokenizer_json(size_t n) {
  std::vector<std::string> tokens;
  std::unordered_set<std::string> seen;
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
  for (const char c : alphabet) {
    tokens.emplace_back(1, c);
    seen.insert(tokens.back());
  }
  std::string merges;
  uint64_t state = 0x9E3779B97F4A7C15ull;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  while (tokens.size() < alphabet.size() + n) {
    const std::string& a = tokens[next() % tokens.size()];
    const std::string b(1, alphabet[next() % alphabet.size()]);
    std::string t = a + b;
    if (t.size() > 40 || !seen.insert(t).second) continue;
    const size_t i = tokens.size() - alphabet.size();
    merges += i == 0 ? "" : ",";
    merges += i % 2 == 0 ? "\"" + a + " " + b + "\"" : "[\"" + a + "\",\"" + b + "\"]";
    tokens.push_back(std::move(t));
  }
  std::string vocab;
  for (size_t i = 0; i < tokens.size(); ++i)
    vocab += (i == 0 ? "\"" : ",\"") + tokens[i] + "\":" + std::to_string(i);
  return R"({"version":"1.0","truncation":null,"padding":null,"added_tokens":[{"id":)" +
         std::to_string(tokens.size()) +
         R"(,"content":"<|end|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],)"
         R"("normalizer":null,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,)"
         R"("use_regex":true},"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE",)"
         R"("dropout":null,"unk_token":null,"fuse_unk":false,"byte_fallback":false,"vocab":{)" +
         vocab + R"(},"merges":[)" + merges + "]}}";
}

TEST(HfTokenizerJson, BigPartsBecomeListsAndTheRestADom) {
  const std::string text = R"({"junk": [1, 2, {"x": 3}], "added_tokens": [{"content": "<s>", "id": 5,
      "special": true, "extra": [1, 2]}, 7, ["x"]], "normalizer": {"type": "NFC"},
      "model": {"type": "BPE", "unk_token": {"a": [1]}, "other": [1], "vocab": {"b": 1, "a": 0, "b": 2, "c": "x", "d": -3, "e": 18446744073709551615},
      "merges": ["a b", ["a", "c"], "#version: 0.2", "x", 5]}})";
  Result<hf::TokenizerJson> r = hf::read_tokenizer_json(text, "tokenizer.json");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Json want_rest =
      Json::parse(R"({"normalizer": {"type": "NFC"}, "model": {"type": "BPE", "unk_token": {}}})");
  EXPECT_EQ(r->rest, want_rest) << r->rest.dump();
  ASSERT_TRUE(r->vocab_is_object);
  using Keys = hf::TokenizerJson::VocabKeys;
  ASSERT_EQ(r->vocab.size(), 6u);  // in file order, "b" twice
  EXPECT_EQ(r->vocab.texts, (TokenTexts{"b", "a", "b", "c", "d", "e"}));
  EXPECT_EQ(r->vocab.ids,
            (std::vector<int32_t>{1, 0, 2, Keys::kNotAnInteger, Keys::kOutOfRange, Keys::kOutOfRange}));
  EXPECT_EQ(r->vocab.out_of_range_value(4), "-3");
  EXPECT_EQ(r->vocab.out_of_range_value(5), "18446744073709551615");
  EXPECT_FALSE(r->vocab_error);
  EXPECT_TRUE(r->merges_present && r->merges_is_array);
  ASSERT_EQ(r->merges.size(), 2u);  // up to the first bad entry
  EXPECT_EQ(r->merges[1], (MergeList::Merge{"a", "c"}));
  ASSERT_TRUE(r->merges_error);
  EXPECT_NE(r->merges_error->message.find("model.merges[3]: 'x' is not two tokens"), std::string::npos)
      << r->merges_error->message;
  ASSERT_TRUE(r->added_present && r->added_is_array);
  ASSERT_EQ(r->added.size(), 3u);
  EXPECT_EQ(r->added[0], Json::parse(R"({"content": "<s>", "special": true})"));
  EXPECT_EQ(r->added[1], Json(7));
  EXPECT_EQ(r->added[2], Json::array());

  // A second "model" replaces the first, lists and all, as in a DOM.
  auto twice = hf::read_tokenizer_json(
      R"({"model": {"vocab": {"a": 0}, "merges": []}, "model": {"type": "BPE"}})", "tokenizer.json");
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(twice->vocab_is_object);
  EXPECT_FALSE(twice->merges_present);
}

// The loader reports what it reported reading a DOM: the entry a sorted iteration meets first, and the
// last of repeated keys.
TEST(HfTokenizerJson, ErrorsNameTheEntriesADomWould) {
  auto load = [](const std::string& model) {
    return hf_tokenizer_from_json(R"({"model": {"type": "BPE", )" + model + "}}", "");
  };
  auto a = load(R"("vocab": {"z": 1.5, "b": "x", "a": 0}, "merges": [])");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("model.vocab: 'b': the id is not an integer"), std::string::npos)
      << a.error().message;
  auto repeated = load(R"("vocab": {"a": "x", "b": 1, "a": 0}, "merges": [])");
  EXPECT_TRUE(repeated.ok()) << repeated.error().message;  // the later "a" replaces the bad one
  auto same_id = load(R"("vocab": {"y": 0, "x": 0}, "merges": [])");
  ASSERT_FALSE(same_id.ok());
  EXPECT_NE(same_id.error().message.find("'x' and 'y' have the same id 0"), std::string::npos)
      << same_id.error().message;
  // Sorted, "a" (1) and "b" (1) meet before "c" (0) and "d" (0); a replaced "a" takes no id.
  auto first_shared = load(R"("vocab": {"d": 0, "a": 5, "c": 0, "b": 1, "a": 1}, "merges": [])");
  ASSERT_FALSE(first_shared.ok());
  EXPECT_NE(first_shared.error().message.find("'a' and 'b' have the same id 1"), std::string::npos)
      << first_shared.error().message;
  auto faults = load(R"("vocab": {"q": -1, "p": 2.5, "r": "x", "p": 0, "s": 7}, "merges": [])");
  ASSERT_FALSE(faults.ok());
  EXPECT_NE(faults.error().message.find("'q': id -1 is out of range"), std::string::npos)
      << faults.error().message;
  auto range = load(R"("vocab": {"a": 18446744073709551615}, "merges": [])");
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.error().message.find("'a': id 18446744073709551615 is out of range"), std::string::npos)
      << range.error().message;
  auto pair = load(R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b", ["a", "b", "c"]])");
  ASSERT_FALSE(pair.ok());
  EXPECT_NE(pair.error().message.find("model.merges[1]: expected \"a b\" or [\"a\", \"b\"]"),
            std::string::npos)
      << pair.error().message;
  auto untagged =
      hf_tokenizer_from_json(R"({"model": {"vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})", "");
  ASSERT_TRUE(untagged.ok()) << untagged.error().message;  // merges present: BPE
  EXPECT_EQ(untagged->encode("ab", false, false).value(), std::vector<int32_t>{2});
  auto not_list = load(R"("vocab": {"a": 0}, "merges": {"a": 1})");
  ASSERT_FALSE(not_list.ok());
  EXPECT_NE(not_list.error().message.find("model.merges: missing or not a list"), std::string::npos)
      << not_list.error().message;
  auto added =
      hf_tokenizer_from_json(R"({"added_tokens": {"x": 1}, "model": {"type": "BPE", "vocab": {"a": 0},
      "merges": []}})",
                             "");
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.error().message.find("added_tokens: must be a list"), std::string::npos)
      << added.error().message;
  auto bad_json = hf_tokenizer_from_json(R"({"model": {"vocab": {"a": 0,}}})", "");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_NE(bad_json.error().message.find(
                "tokenizer.json: not valid JSON: line 1, column 29: expected a string key, found '}'"),
            std::string::npos)
      << bad_json.error().message;
}

TEST(HfTokenizerJson, LargeFilePeakMemoryStaysWithinTheBound) {
  const std::string text = large_tokenizer_json(150000);
  ASSERT_GT(text.size(), size_t{3} << 20);
  const auto before = static_cast<int64_t>(test::live_bytes());
  test::reset_peak_bytes();
  Result<Tokenizer> t = hf_tokenizer_from_json(text, "");
  const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_GT(t->vocab().tokens.size(), 150000u);
  const auto ids = t->encode("abc", false, false);
  ASSERT_TRUE(ids.ok());
  EXPECT_FALSE(ids->empty());
  // Beyond the text itself: at most the text's size + 64 MiB (2x the input + 64 MiB in all).
  const auto bound = static_cast<int64_t>(text.size()) + (int64_t{64} << 20);
  EXPECT_LE(peak, bound) << "peak " << peak << " bytes beyond the " << text.size() << "-byte text";
  std::printf("tokenizer.json %zu bytes: peak %lld bytes allocated while loading (bound %lld)\n", text.size(),
              static_cast<long long>(peak), static_cast<long long>(bound));
}

// Millions of short merges cost their bytes, not a string pair each (64 bytes of headers): a hostile
// file of merges naming no token is refused within the same bound as a real one.
TEST(HfTokenizerJson, ManyShortMergesStayWithinTheBound) {
  std::string text = R"({"model": {"type": "BPE", "vocab": {"x": 0}, "merges": [)";
  constexpr size_t kMerges = 2000000;
  for (size_t i = 0; i < kMerges; ++i) text += i == 0 ? "\"a b\"" : ",\"a b\"";
  text += "]}}";
  const auto before = static_cast<int64_t>(test::live_bytes());
  test::reset_peak_bytes();
  Result<Tokenizer> t = hf_tokenizer_from_json(text, "");
  const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("merge 0 ('a' 'b'): 'a' is not in the vocabulary"), std::string::npos)
      << t.error().message;
  const auto bound = static_cast<int64_t>(text.size()) + (int64_t{64} << 20);
  EXPECT_LE(peak, bound) << "peak " << peak << " bytes beyond the " << text.size() << "-byte text";
}

// Millions of short tokens cost their bytes and a few integers each, not a string, a pair and a map
// node apiece (~150 bytes of headers: 483 MB for a 58 MB file): a hostile file whose one merge names
// no token is refused within the bound, the text included, after every token was read.
TEST(HfTokenizerJson, ManyShortTokensStayWithinTheBound) {
  std::string text = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2)";
  constexpr int kTokens = 3000000;
  for (int i = 0; i < kTokens; ++i) text += fmt::format(R"(, "t{}": {})", i, i + 3);
  text += R"(}, "merges": ["a c"]}})";
  const auto before = static_cast<int64_t>(test::live_bytes());
  test::reset_peak_bytes();
  Result<Tokenizer> t = hf_tokenizer_from_json(text, "");
  const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("merge 0 ('a' 'c'): 'c' is not in the vocabulary"), std::string::npos)
      << t.error().message;
  const auto bound = static_cast<int64_t>(text.size()) + (int64_t{64} << 20);
  EXPECT_LE(peak, bound) << "peak " << peak << " bytes beyond the " << text.size() << "-byte text";
  std::printf("tokenizer.json of %d tokens, %zu bytes: peak %lld bytes beyond the text (bound %lld)\n",
              kTokens, text.size(), static_cast<long long>(peak), static_cast<long long>(bound));
}

// The real files, loaded as a model directory's are (read, parsed, built): the peak, the file's
// text included, stays within 2x its size + 64 MiB. Gemma 3's 14 MB file (262k tokens) peaked at
// ~116 MB while the text and the vocabulary's id map lived until the tokenizer was built.
class HfTokenizerJsonFiles : public test::WithSharedFixtures {};

TEST_F(HfTokenizerJsonFiles, RealFilesPeakWithinTheBound) {
  for (const char* name : {"gemma3", "llama3", "qwen2_5", "mistral_nemo"}) {
    const std::filesystem::path path = fixtures_ / "tokenizers" / "hf" / name / "tokenizer.json";
    const auto size = static_cast<int64_t>(std::filesystem::file_size(path));
    const auto before = static_cast<int64_t>(test::live_bytes());
    test::reset_peak_bytes();
    Result<Tokenizer> t = load_hf_tokenizer(path);
    const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().message;
    const int64_t bound = 2 * size + (int64_t{64} << 20);
    EXPECT_LE(peak, bound) << name << ": peak " << peak << " bytes for a " << size << "-byte file";
    std::printf("%s: %lld-byte tokenizer.json, peak %lld bytes while loading (bound %lld)\n", name,
                static_cast<long long>(size), static_cast<long long>(peak), static_cast<long long>(bound));
  }
}

}  // namespace
}  // namespace glass::tokenizer
