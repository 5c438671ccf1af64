// HF tokenizer.json -> GGUF tokenizer.ggml.* keys, read back with the GGUF vocabulary reader: the
// written vocabulary must tokenize every fixture case as the HF tokenizer does (cases.json, from HF
// tokenizers) and as glass's own HF tokenizer does on the same files.
#include "formats/hf_gguf_vocab.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "formats/gguf_vocab.h"
#include "support/fixtures.h"
#include "support/vocab_cases.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

using Ids = std::vector<int32_t>;
using Json = nlohmann::json;
using tokenizer::Tokenizer;

Result<GgufFile> convert(const HfTokenizerFiles& files, int64_t n_vocab = 0, const std::string& name = "") {
  GgufMetadataBuilder m;
  if (!name.empty()) m.string("general.name", name);
  if (Status s = hf_tokenizer_to_gguf(files, n_vocab, m); !s) return s.error();
  return m.build("converted");
}

Result<Tokenizer> gguf_tokenizer(const GgufFile& f) {
  auto v = vocab_from_gguf(f);
  if (!v) return v.error();
  return Tokenizer::create(std::move(*v));
}

class HfGgufVocab : public test::WithSharedFixtures {
 protected:
  std::filesystem::path hf(const std::string& name) const { return fixtures_ / "tokenizers" / "hf" / name; }

  // Every case of tokenizers/hf/<name>/cases.json: the converted GGUF vocabulary (special parsing
  // on, as HF matches added tokens in text) gives the HF ids, except the named cases.
  // `general_name`: the model's general.name (llama.cpp gives Phi-3's special tokens rstrip by name).
  void check(const std::string& name, const std::string& model, const std::string& pre,
             const std::set<std::string>& known_differences = {}, const std::string& general_name = "") {
    auto files = read_hf_tokenizer_files(hf(name));
    ASSERT_TRUE(files.ok()) << files.error().message;
    auto f = convert(*files, 0, general_name);
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f->get_string("tokenizer.ggml.model").value(), model);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre").value(), pre);
    auto t = gguf_tokenizer(*f);
    ASSERT_TRUE(t.ok()) << t.error().message;
    auto h = tokenizer::load_hf_tokenizer(hf(name));
    ASSERT_TRUE(h.ok()) << h.error().message;
    const Json cases = Json::parse(test::read_text(hf(name) / "cases.json"))["cases"];
    ASSERT_EQ(cases.size(), 65u);
    int same = 0;
    for (const Json& c : cases) {
      const std::string text = c["text"];
      auto ids = t->encode(text, false, true);
      ASSERT_TRUE(ids.ok()) << ids.error().message;
      auto with_special = t->encode(text, true, true);
      ASSERT_TRUE(with_special.ok()) << with_special.error().message;
      if (known_differences.count(c["name"].get<std::string>()) != 0) {
        EXPECT_NE(*ids, c["ids"].get<Ids>())
            << name << " case " << c["name"] << " now agrees: update the test";
        continue;
      }
      EXPECT_EQ(*ids, c["ids"].get<Ids>()) << name << " case " << c["name"];
      EXPECT_EQ(*with_special, c["ids_with_special"].get<Ids>()) << name << " case " << c["name"];
      EXPECT_EQ(*ids, h->encode(text, false, true).value()) << name << " case " << c["name"];
      same += *ids == c["ids"].get<Ids>() ? 1 : 0;
    }
    RecordProperty("cases_same", same);
  }
};

TEST_F(HfGgufVocab, Llama3IsLlamaBpe) { check("llama3", "gpt2", "llama-bpe"); }
// Where llama.cpp's reading of the same vocabulary differs from HF tokenizers (the GGUF follows
// llama.cpp): Qwen2.5's NFC normalizer is not applied by llama.cpp's qwen2 pre-tokenizer
// (convert_hf_to_gguf.py writes the vocabulary all the same), so combining accents stay apart; and
// llama.cpp makes Qwen's plain vocabulary token "</s>" a control (end-of-generation) token, which
// special parsing then matches in text.
TEST_F(HfGgufVocab, Qwen25IsQwen2) {
  check("qwen2_5", "gpt2", "qwen2", {"accent_combining", "special_mistral"});
}
TEST_F(HfGgufVocab, MistralNemoIsTekken) { check("mistral_nemo", "gpt2", "tekken"); }
TEST_F(HfGgufVocab, Phi3IsSentencePiece) { check("phi3_mini", "llama", "default", {}, "Phi-3 mini"); }
TEST_F(HfGgufVocab, Llama2IsSentencePiece) { check("llama2", "llama", "default", {"special_mistral"}); }

TEST_F(HfGgufVocab, Stories260KSameAsItsGguf) {
  const auto dir = fixtures_ / "models" / "stories260K-hf";
  auto files = read_hf_tokenizer_files(dir);
  ASSERT_TRUE(files.ok()) << files.error().message;
  auto f = convert(*files, 512);
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto t = gguf_tokenizer(*f);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto reference = GgufFile::open(fixtures_ / "models" / "stories260K.gguf");
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").value(),
            reference->get_string_array("tokenizer.ggml.tokens").value());
  EXPECT_EQ(f->get_i32_array("tokenizer.ggml.token_type").value(),
            reference->get_i32_array("tokenizer.ggml.token_type").value());
  for (const char* key :
       {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"})
    EXPECT_EQ(f->get_u32(key).value(), reference->get_u32(key).value()) << key;
  EXPECT_TRUE(f->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_FALSE(f->get_bool("tokenizer.ggml.add_eos_token").value());
  const Json cases =
      Json::parse(test::read_text(fixtures_ / "reference" / "stories260K" / "tokenizer_cases.json"))["cases"];
  ASSERT_EQ(cases.size(), 20u);
  for (const Json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(t->encode(text, false, false).value(), c["ids"].get<Ids>()) << text;
    EXPECT_EQ(t->encode(text, true, false).value(), c["ids_with_bos"].get<Ids>()) << text;
  }
}

TEST_F(HfGgufVocab, PadsToTheModelVocabulary) {
  auto files = read_hf_tokenizer_files(fixtures_ / "models" / "stories260K-hf");
  ASSERT_TRUE(files.ok());
  auto f = convert(*files, 515);
  ASSERT_TRUE(f.ok()) << f.error().message;
  const auto tokens = f->get_string_array("tokenizer.ggml.tokens").value();
  ASSERT_EQ(tokens.size(), 515u);
  EXPECT_EQ(tokens[513], "[PAD513]");
  EXPECT_EQ(f->get_i32_array("tokenizer.ggml.token_type").value()[514], 5);  // Unused
  auto small = convert(*files, 100);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("512 tokens but the model's vocabulary has 100"), std::string::npos)
      << small.error().message;
}

TEST_F(HfGgufVocab, ChatTemplateFromTheConfigOrTheJinjaFile) {
  auto files = read_hf_tokenizer_files(hf("qwen2_5"));
  ASSERT_TRUE(files.ok());
  auto f = convert(*files);
  ASSERT_TRUE(f.ok());
  const std::string config_template = Json::parse(files->config_json)["chat_template"].get<std::string>();
  EXPECT_EQ(f->get_string("tokenizer.chat_template").value(), config_template);
  files->chat_template_jinja = "{{ messages[0].content }}";
  f = convert(*files);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->get_string("tokenizer.chat_template").value(), "{{ messages[0].content }}");
}

// What cannot be mapped is refused, naming the section.
TEST(HfGgufVocabErrors, UnmappableTokenizersAreRefused) {
  auto error = [](const std::string& json) {
    GgufMetadataBuilder m;
    Status s = hf_tokenizer_to_gguf({json, "", "", "dir/tokenizer.json"}, 0, m);
    return s ? std::string() : s.error().message;
  };
  const std::string vocab = R"("vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])";
  EXPECT_NE(error(R"({"model": {"type": "Unigram", "vocab": []}})").find("model.type: 'Unigram'"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "model": {"type": "BPE", )" +
            vocab + "}}")
          .find("dir/tokenizer.json: pre_tokenizer"),
      std::string::npos);
  EXPECT_NE(error(R"({"pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": )"
                  R"({"Regex": "x"}, "behavior": "Isolated"}, {"type": "ByteLevel", "use_regex": false}]}, )"
                  R"("model": {"type": "BPE", )" +
                  vocab + "}}")
                .find("split pattern 'x'"),
            std::string::npos);
  EXPECT_NE(error(R"({"normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "ByteLevel"}, )"
                  R"("model": {"type": "BPE", )" +
                  vocab + "}}")
                .find("normalizer: 'Lowercase'"),
            std::string::npos);
  EXPECT_NE(error(R"({"normalizer": {"type": "NFKC"}, "model": {"type": "BPE", "byte_fallback": true, )" +
                  vocab + "}}")
                .find("normalizer: 'NFKC'"),
            std::string::npos);
  // A byte-level BPE that llama.cpp names: accepted.
  EXPECT_EQ(
      error(
          R"({"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false}, "model": {"type": "BPE", )" +
          vocab + "}}"),
      "");
}

}  // namespace
}  // namespace glass::formats
