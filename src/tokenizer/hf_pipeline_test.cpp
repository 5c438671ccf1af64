// Small hand-written tokenizer.json files: BPE merge order and options (ignore_merges, byte_fallback,
// unk fusing, subword prefixes), WordPiece as BERT uses it, added tokens with their flags, the
// post-processor and tokenizer_config.json overrides, and near-linear time on long inputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_tokenizer.h"

namespace glass::tokenizer {
namespace {

using Ids = std::vector<int32_t>;
using Json = nlohmann::json;

Tokenizer make(const Json& j, const Json& config = Json()) {
  Result<Tokenizer> t = hf_tokenizer_from_json(j.dump(), config.is_null() ? "" : config.dump());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t) std::abort();
  return std::move(t).value();
}

Ids enc(const Tokenizer& t, std::string_view text, bool add_special = false, bool parse_special = true) {
  Result<Ids> r = t.encode(text, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Ids{};
}

// A byte-less BPE over "a".."d" with merges ab, bc, abc (ranks 0, 1, 2).
Json bpe(Json merges = Json::array({"a b", "b c", "ab c"})) {
  return {
      {"model",
       {{"type", "BPE"},
        {"vocab", {{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}, {"ab", 4}, {"bc", 5}, {"abc", 6}, {"<unk>", 7}}},
        {"merges", std::move(merges)}}}};
}

TEST(HfBpe, LowestRankMergesFirst) {
  EXPECT_EQ(enc(make(bpe()), "abc"), (Ids{6}));  // ab (0), then ab+c (2)
  EXPECT_EQ(enc(make(bpe(Json::array({"b c", "a b", "ab c"}))), "abc"), (Ids{0, 5}));      // bc first: a + bc
  EXPECT_EQ(enc(make(bpe(Json::array({Json::array({"a", "b"})}))), "abab"), (Ids{4, 4}));  // pair form
  // Characters the vocabulary lacks are dropped without an unk token, as HF does.
  EXPECT_EQ(enc(make(bpe()), "axd"), (Ids{0, 3}));
}

TEST(HfBpe, UnkFuseAndByteFallback) {
  Json j = bpe();
  j["model"]["unk_token"] = "<unk>";
  EXPECT_EQ(enc(make(j), "axyd"), (Ids{0, 7, 7, 3}));
  j["model"]["fuse_unk"] = true;
  EXPECT_EQ(enc(make(j), "axyd"), (Ids{0, 7, 3}));
  j["model"]["byte_fallback"] = true;
  j["model"]["vocab"]["<0x78>"] = 8;  // 'x' only
  EXPECT_EQ(enc(make(j), "axyd"), (Ids{0, 8, 7, 3}));
}

TEST(HfBpe, IgnoreMergesAndPrefixes) {
  Json j = bpe(Json::array({"a b"}));
  j["model"]["vocab"]["abcd"] = 9;
  EXPECT_EQ(enc(make(j), "abcd"), (Ids{4, 2, 3}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(enc(make(j), "abcd"), (Ids{9}));

  // continuing_subword_prefix "##": non-initial characters carry it, merges strip it from the right part.
  Json w = {{"model",
             {{"type", "BPE"},
              {"vocab", {{"a", 0}, {"##b", 1}, {"ab", 2}, {"##c", 3}, {"abc", 4}}},
              {"merges", {"a ##b", "ab ##c"}},
              {"continuing_subword_prefix", "##"}}}};
  EXPECT_EQ(enc(make(w), "abc"), (Ids{4}));
  EXPECT_EQ(enc(make(w), "ab"), (Ids{2}));
}

TEST(HfBpe, LongInputsEncodeInNearLinearTime) {
  // One word (no pre-tokenizer) of 2^18 characters: the merge queue keeps this O(n log n).
  const Tokenizer t = make(bpe());
  const std::string text(1 << 18, 'a');
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(enc(t, text).size(), text.size());
  const std::string abc = [] {
    std::string s;
    for (int i = 0; i < (1 << 16); ++i) s += "abc";
    return s;
  }();
  EXPECT_EQ(enc(t, abc), Ids(1 << 16, 6));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30.0);
}

// BERT-style: BertNormalizer, BertPreTokenizer, WordPiece, BertProcessing, WordPiece decoder.
Json bert() {
  return {{"normalizer", {{"type", "BertNormalizer"}, {"lowercase", true}, {"strip_accents", nullptr}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"added_tokens",
           Json::array({{{"id", 0}, {"content", "[PAD]"}, {"special", true}, {"normalized", false}},
                        {{"id", 1}, {"content", "[UNK]"}, {"special", true}, {"normalized", false}},
                        {{"id", 2}, {"content", "[CLS]"}, {"special", true}, {"normalized", false}},
                        {{"id", 3}, {"content", "[SEP]"}, {"special", true}, {"normalized", false}}})},
          {"model",
           {{"type", "WordPiece"},
            {"unk_token", "[UNK]"},
            {"vocab",
             {{"[PAD]", 0},
              {"[UNK]", 1},
              {"[CLS]", 2},
              {"[SEP]", 3},
              {"un", 4},
              {"##aff", 5},
              {"##able", 6},
              {"cafe", 7},
              {"!", 8},
              {"runn", 9},
              {"##ing", 10}}}}}};
}

TEST(HfWordPiece, BertPipeline) {
  const Tokenizer t = make(bert());
  EXPECT_EQ(enc(t, "Unaffable Caf\xC3\xA9!"), (Ids{4, 5, 6, 7, 8}));
  EXPECT_EQ(enc(t, "running xyz", true), (Ids{2, 9, 10, 1, 3}));  // unknown word -> [UNK]
  EXPECT_EQ(t.decode({2, 4, 5, 6, 7, 8, 3}, false), "unaffable cafe!");
  EXPECT_EQ(t.decode({2, 4, 5, 6, 3}, true), "[CLS] unaffable [SEP]");
  Json long_word = bert();
  long_word["model"]["max_input_chars_per_word"] = 5;
  EXPECT_EQ(enc(make(long_word), "running"), (Ids{1}));
}

// A byte-level tokenizer with added tokens carrying every flag.
Json with_added() {
  Json j = {{"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}}},
            {"model", {{"type", "BPE"}, {"vocab", Json::object()}, {"merges", Json::array()}}}};
  int id = 0;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    const uint32_t cp = b >= '!' && b <= '~' ? static_cast<uint32_t>(b) : 0;
    if (cp) s = std::string(1, static_cast<char>(b));
    if (!s.empty()) j["model"]["vocab"][s] = id++;
  }
  j["model"]["vocab"]["\xC4\xA0"] = id++;  // "Ġ" (space)
  auto add = [&](const char* content, bool special, bool lstrip, bool rstrip, bool single_word) {
    j["added_tokens"].push_back({{"id", id++},
                                 {"content", content},
                                 {"special", special},
                                 {"lstrip", lstrip},
                                 {"rstrip", rstrip},
                                 {"single_word", single_word},
                                 {"normalized", false}});
  };
  add("<s>", true, false, false, false);    // 95
  add("<L>", true, true, false, false);     // 96: swallows spaces before it
  add("<R>", true, false, true, false);     // 97: swallows spaces after it
  add("cat", false, false, false, true);    // 98: whole words only
  add("<s>x", false, false, false, false);  // 99: longer than <s>
  return j;
}

TEST(HfAddedTokens, FlagsAsHf) {
  const Tokenizer t = make(with_added());
  const int32_t space = 94, s = 95, l = 96, r = 97, cat = 98, sx = 99;
  const auto ch = [](char c) { return static_cast<int32_t>(c - '!'); };
  EXPECT_EQ(enc(t, "a  <L>b"), (Ids{ch('a'), l, ch('b')}));
  EXPECT_EQ(enc(t, "a<R>  b"), (Ids{ch('a'), r, ch('b')}));
  EXPECT_EQ(enc(t, "a cat b"), (Ids{ch('a'), space, cat, space, ch('b')}));
  EXPECT_EQ(enc(t, "concat"), (Ids{ch('c'), ch('o'), ch('n'), ch('c'), ch('a'), ch('t')}));
  // Leftmost-longest: "<s>x" wins over "<s>".
  EXPECT_EQ(enc(t, "<s>x<s>"), (Ids{sx, s}));
  // Without parse_special a special token is text, and the search resumes after it: the non-special
  // "<s>x" inside "<s>x" is still found because it is the longest match there.
  EXPECT_EQ(enc(t, "<s>y", false, false), (Ids{ch('<'), ch('s'), ch('>'), ch('y')}));
  EXPECT_EQ(enc(t, "<s>x", false, false), (Ids{sx}));
  // decode: special tokens are skipped unless asked for; others always render.
  EXPECT_EQ(t.decode({s, ch('a'), sx}, false), "a<s>x");
  EXPECT_EQ(t.decode({s, ch('a'), sx}, true), "<s>a<s>x");
}

// An added token listed again (same content, hence the same id) replaces the earlier entry, flags
// and all (HF keeps one token per id); every other entry of a long list keeps its id.
TEST(HfAddedTokens, ARepeatedEntryReplacesTheEarlier) {
  Json j = bpe();
  j["added_tokens"] = Json::array();
  for (int i = 0; i < 3000; ++i)
    j["added_tokens"].push_back({{"id", 8 + i}, {"content", fmt::format("<t{}>", i)}, {"special", true}});
  j["added_tokens"].push_back({{"id", 8}, {"content", "<t0>"}, {"special", false}});
  const Tokenizer t = make(j);
  EXPECT_EQ(enc(t, "<t0>"), (Ids{8}));
  EXPECT_EQ(t.vocab().types[8], TokenType::UserDefined);  // the later entry's flags
  EXPECT_EQ(t.vocab().types[9], TokenType::Control);
  EXPECT_EQ(t.vocab().tokens.size(), 3008u);
  EXPECT_EQ(enc(t, "a<t1>b<t2999>"), (Ids{0, 9, 1, 3007}));
}

TEST(HfPostProcessor, TemplateAndConfigOverrides) {
  Json j = with_added();
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", Json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                                 {{"SpecialToken", {{"id", "<R>"}, {"type_id", 0}}}}})},
                         {"special_tokens",
                          {{"<s>", {{"id", "<s>"}, {"ids", {95}}, {"tokens", {"<s>"}}}},
                           {"<R>", {{"id", "<R>"}, {"ids", {97}}, {"tokens", {"<R>"}}}}}}};
  const Tokenizer t = make(j, Json{{"bos_token", "<s>"}, {"eos_token", {{"content", "<R>"}}}});
  EXPECT_EQ(enc(t, "a", true), (Ids{95, 0 + 'a' - '!', 97}));
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.bos_id(), 95);
  EXPECT_EQ(t.eos_id(), 97);
  // add_bos_token / add_eos_token in tokenizer_config.json replace the template's BOS / EOS.
  const Tokenizer no_bos =
      make(j, Json{{"bos_token", "<s>"}, {"eos_token", "<R>"}, {"add_bos_token", false}});
  EXPECT_EQ(enc(no_bos, "a", true), (Ids{'a' - '!', 97}));
  EXPECT_FALSE(no_bos.add_bos());
  const Tokenizer eos = make(j, Json{{"eos_token", "<R>"}, {"add_eos_token", false}});
  EXPECT_EQ(enc(eos, "a", true), (Ids{95, 'a' - '!'}));
  // Roberta-style processing names its ids directly.
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"<R>", 97}}, {"cls", {"<s>", 95}}};
  EXPECT_EQ(enc(make(j), "a", true), (Ids{95, 'a' - '!', 97}));
}

}  // namespace
}  // namespace glass::tokenizer
