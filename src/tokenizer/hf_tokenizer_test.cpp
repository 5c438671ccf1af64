// Every HF tokenizer set in fixtures/tokenizers/hf/ against its cases.json (expected values from HF
// tokenizers 0.23.2): ids, ids_with_special, the three decodes, transformers' clean-up where the
// config asks for it, the token strings, and streaming; plus the llama.cpp .inp/.out vectors that sit
// beside each tokenizer.json. Where @lenml or llama.cpp differ (lenml_differs / llamacpp_differs),
// glass follows HF tokenizers, as the README asks.
#include "tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fixtures.h"
#include "support/vocab_cases.h"

namespace glass::tokenizer {
namespace {

using Ids = std::vector<int32_t>;
using Json = nlohmann::json;

class HfSets : public test::WithSharedFixtures, public ::testing::WithParamInterface<const char*> {
 protected:
  std::filesystem::path dir() const { return fixtures_ / "tokenizers" / "hf" / GetParam(); }
  // Loaded once per set (gemma3's tokenizer.json is 14 MB); a test-only cache.
  const Tokenizer& tokenizer() {
    static std::map<std::string, Tokenizer> cache;
    auto it = cache.find(GetParam());
    if (it == cache.end()) {
      Result<Tokenizer> t = load_hf_tokenizer(dir());
      EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
      if (!t) std::abort();
      it = cache.emplace(GetParam(), std::move(t).value()).first;
    }
    return it->second;
  }
  Json cases() const { return Json::parse(test::read_text(dir() / "cases.json")); }
};

Ids enc(const Tokenizer& t, const std::string& text, bool add_special, bool parse_special = true) {
  Result<Ids> r = t.encode(text, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Ids{};
}

TEST_P(HfSets, CasesMatchHfTokenizers) {
  const Tokenizer& t = tokenizer();
  const Json all = cases();
  ASSERT_EQ(all["format"], "glass-tokenizer-cases/1");
  std::map<std::string, int> passed;
  int n = 0;
  auto check = [&](const char* field, bool ok, const Json& c, const std::string& got) {
    if (ok) {
      ++passed[field];
    } else {
      ADD_FAILURE() << GetParam() << " case " << c["name"] << " field " << field << "\n  text " << c["text"]
                    << "\n  got      " << got << "\n  expected " << c[field];
    }
  };
  for (const Json& c : all["cases"]) {
    ++n;
    const std::string text = c["text"];
    const Ids ids = enc(t, text, false), with = enc(t, text, true);
    check("ids", ids == c["ids"].get<Ids>(), c, ::testing::PrintToString(ids));
    check("ids_with_special", with == c["ids_with_special"].get<Ids>(), c, ::testing::PrintToString(with));
    const Ids want_ids = c["ids"].get<Ids>(), want_with = c["ids_with_special"].get<Ids>();
    const std::string d = t.decode(want_ids, true), ds = t.decode(want_with, true),
                      dk = t.decode(want_with, false);
    check("decode", d == c["decode"], c, Json(d).dump());
    check("decode_with_special", ds == c["decode_with_special"], c, Json(ds).dump());
    check("decode_with_special_skip", dk == c["decode_with_special_skip"], c, Json(dk).dump());
    if (c.contains("decode_clean_up")) {
      const std::string dc = t.decode(want_ids, DecodeOptions{true, true});
      check("decode_clean_up", dc == c["decode_clean_up"], c, Json(dc).dump());
    }
    // HF reports an added token's piece as the text it matched, with the whitespace lstrip / rstrip
    // swallowed ("<|user|>\n"); token_text is the token itself.
    std::vector<std::string> tokens, expected = c["tokens"].get<std::vector<std::string>>();
    for (int32_t id : want_ids) tokens.push_back(t.token_text(id));
    for (size_t k = 0; k < std::min(tokens.size(), expected.size()); ++k) {
      const size_t b = expected[k].find_first_not_of(" \t\n\r"), e = expected[k].find_last_not_of(" \t\n\r");
      if (b != std::string::npos && expected[k].substr(b, e - b + 1) == tokens[k]) expected[k] = tokens[k];
    }
    check("tokens", tokens == expected, c, Json(tokens).dump());
  }
  for (const char* field :
       {"ids", "ids_with_special", "decode", "decode_with_special", "decode_with_special_skip", "tokens"}) {
    EXPECT_EQ(passed[field], n) << GetParam() << " " << field;
    RecordProperty(std::string(field) + "_passed", passed[field]);
  }
  EXPECT_EQ(n, 65);
}

TEST_P(HfSets, StreamingConcatenatesToDecode) {
  const Tokenizer& t = tokenizer();
  const Json all = cases();
  for (const Json& c : all["cases"]) {
    const Ids ids = c["ids_with_special"].get<Ids>();
    for (bool special : {true, false}) {
      StreamingDecoder stream(t, StreamOptions{special, false});
      std::string streamed;
      for (int32_t id : ids) streamed += stream.push(id);
      streamed += stream.flush();
      EXPECT_EQ(streamed, t.decode(ids, special)) << GetParam() << " case " << c["name"];
    }
  }
}

TEST_P(HfSets, LlamaCppVectorsBesideTheTokenizer) {
  const Tokenizer& t = tokenizer();
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir())) {
    if (entry.path().extension() != ".inp") continue;
    ++files;
    const auto vectors = test::read_vocab_cases(entry.path());
    EXPECT_EQ(vectors.size(), 46u) << entry.path();
    int passed = 0;
    for (const test::VocabCase& v : vectors) {
      const Ids ids = enc(t, v.text, false, false);
      if (ids == v.ids) {
        ++passed;
      } else {
        ADD_FAILURE() << entry.path().filename() << " text '" << v.text << "'\n  got      "
                      << ::testing::PrintToString(ids) << "\n  expected " << ::testing::PrintToString(v.ids);
      }
    }
    EXPECT_EQ(passed, static_cast<int>(vectors.size())) << entry.path();
  }
  EXPECT_EQ(files, std::string(GetParam()) == "mistral_nemo" ? 0 : 1);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfSets,
                         ::testing::Values("llama3", "qwen2_5", "gemma3", "mistral_nemo", "llama2",
                                           "phi3_mini"),
                         [](const ::testing::TestParamInfo<const char*>& p) { return std::string(p.param); });

// Properties the README calls out, checked directly.
class HfProperties : public test::WithSharedFixtures {
 protected:
  Tokenizer load(const char* name) {
    Result<Tokenizer> t = load_hf_tokenizer(fixtures_ / "tokenizers" / "hf" / name / "tokenizer.json");
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    if (!t) std::abort();
    return std::move(t).value();
  }
};

TEST_F(HfProperties, SpecialTokensAndBos) {
  const Tokenizer qwen = load("qwen2_5");
  // <|im_start|> is special: one token with parse_special, plain text without.
  EXPECT_EQ(enc(qwen, "<|im_start|>", false, true), Ids{151644});
  EXPECT_GT(enc(qwen, "<|im_start|>", false, false).size(), 1u);
  EXPECT_FALSE(qwen.add_bos());
  EXPECT_TRUE(qwen.is_eog(151645));  // <|im_end|>, the config's eos_token
  const Tokenizer llama2 = load("llama2");
  EXPECT_TRUE(llama2.add_bos());
  const Ids with = enc(llama2, "<s>Hi", true);
  // HF adds its BOS even when the text spells one; begins_with_bos lets a caller avoid that.
  ASSERT_GE(with.size(), 2u);
  EXPECT_EQ(with[0], 1);
  EXPECT_EQ(with[1], 1);
  EXPECT_TRUE(llama2.begins_with_bos(enc(llama2, "<s>Hi", false)));
  EXPECT_EQ(enc(llama2, "<s>Hi", false).front(), 1);
}

TEST_F(HfProperties, ContinuationStreamsReadAsNotFirst) {
  // Llama 2's decoder strips the space of the first token; a continuation stream keeps it.
  const Tokenizer llama2 = load("llama2");
  const Ids ids = enc(llama2, "Hello world", false);
  StreamingDecoder stream(llama2, StreamOptions{false, true});
  std::string out;
  for (int32_t id : ids) out += stream.push(id);
  out += stream.flush();
  EXPECT_EQ(out, " Hello world");
  EXPECT_EQ(llama2.decode(ids), "Hello world");
}

}  // namespace
}  // namespace glass::tokenizer
