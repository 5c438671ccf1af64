// vocab_from_gguf + the tokenizer against llama.cpp's own outputs: stories260K's tokenizer cases and
// greedy prompts, llama.cpp's test-tokenizer-0 vectors for the llama-spm and phi-3 vocabularies, and
// the HF tokenizer cases that llama.cpp reproduces with those vocabularies. Plus metadata rules
// (defaults, none ids, errors) on small written GGUFs.
#include "formats/gguf_vocab.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/fixtures.h"
#include "support/gguf_writer.h"
#include "support/vocab_cases.h"
#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

using Ids = std::vector<int32_t>;
using tokenizer::Tokenizer;
using tokenizer::TokenType;
using Json = nlohmann::json;
using test::read_text;
using test::read_vocab_cases;
using test::VocabCase;

Json read_json(const std::filesystem::path& path) { return Json::parse(read_text(path)); }

Result<tokenizer::Vocab> load_vocab(const std::filesystem::path& path) {
  Result<GgufFile> file = GgufFile::open(path);
  if (!file) return file.error();
  return vocab_from_gguf(*file);
}

Tokenizer load_tokenizer(const std::filesystem::path& path) {
  Result<tokenizer::Vocab> vocab = load_vocab(path);
  EXPECT_TRUE(vocab.ok()) << (vocab.ok() ? "" : vocab.error().message);
  if (!vocab) std::abort();
  Result<Tokenizer> t = Tokenizer::create(std::move(vocab).value());
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  if (!t) std::abort();
  return std::move(t).value();
}

Ids encode(const Tokenizer& t, std::string_view text, bool add_special, bool parse_special) {
  Result<Ids> r = t.encode(text, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Ids{};
}

class GgufVocabFixtures : public test::WithSharedFixtures {
 protected:
  std::filesystem::path stories() const { return fixtures_ / "models" / "stories260K.gguf"; }
  std::filesystem::path vocab_gguf(const std::string& name) const {
    return fixtures_ / "tokenizers" / "gguf" / ("ggml-vocab-" + name + ".gguf");
  }

  // Every .inp/.out case must match exactly (no BOS, no special parsing: llama.cpp's test). Returns
  // how many cases decode back to their text.
  int check_vocab_vectors(const std::string& name, std::vector<std::string>* lossy) {
    const Tokenizer t = load_tokenizer(vocab_gguf(name));
    const auto cases = read_vocab_cases(vocab_gguf(name).string() + ".inp");
    EXPECT_EQ(cases.size(), 46u);
    int round_trips = 0;
    for (const VocabCase& c : cases) {
      const Ids ids = encode(t, c.text, false, false);
      EXPECT_EQ(ids, c.ids) << name << " text: '" << c.text << "'";
      if (t.decode(ids) == c.text) {
        ++round_trips;
      } else if (lossy) {
        lossy->push_back(c.text);
      }
    }
    return round_trips;
  }
};

TEST_F(GgufVocabFixtures, Stories260KMetadata) {
  Result<tokenizer::Vocab> v = load_vocab(stories());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->model, "llama");
  EXPECT_EQ(v->tokens.size(), 512u);
  EXPECT_EQ(v->scores.size(), 512u);
  EXPECT_EQ(v->tokens[1], "<s>");
  EXPECT_EQ(v->types[0], TokenType::Unknown);
  EXPECT_EQ(v->types[1], TokenType::Control);
  EXPECT_EQ(v->types[3], TokenType::Byte);
  EXPECT_EQ(v->types[300], TokenType::Normal);
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->pad_id, -1);  // the file says 4294967295
  EXPECT_TRUE(v->add_bos);   // no add_bos_token key: llama.cpp's SPM default
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_EQ(v->eog_ids, Ids{2});
  EXPECT_TRUE(v->strip.empty());
  const Tokenizer t = load_tokenizer(stories());
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_FALSE(t.is_eog(1));
  EXPECT_EQ(t.token_to_piece(259), " t");
  EXPECT_EQ(t.token_to_piece(3 + '\n'), "\n");
}

TEST_F(GgufVocabFixtures, Stories260KTokenizerCases) {
  const Tokenizer t = load_tokenizer(stories());
  const Json cases = read_json(fixtures_ / "reference" / "stories260K" / "tokenizer_cases.json")["cases"];
  ASSERT_EQ(cases.size(), 20u);
  for (const Json& c : cases) {
    const std::string text = c["text"];
    EXPECT_EQ(encode(t, text, false, false), c["ids"].get<Ids>()) << text;
    EXPECT_EQ(encode(t, text, true, false), c["ids_with_bos"].get<Ids>()) << text;
    if (c["hf_decode_roundtrip"].get<bool>()) {
      EXPECT_EQ(t.decode(c["ids"].get<Ids>()), text);
      // With BOS first, llama.cpp keeps the first word's space: " " + text.
      EXPECT_EQ(t.decode(c["ids_with_bos"].get<Ids>()), " " + text);
      EXPECT_EQ(t.decode(c["ids_with_bos"].get<Ids>(), true), "<s> " + text);
    }
  }
}

TEST_F(GgufVocabFixtures, Stories260KGreedyPrompts) {
  const Tokenizer t = load_tokenizer(stories());
  const Json greedy = read_json(fixtures_ / "reference" / "stories260K" / "greedy.json");
  ASSERT_FALSE(greedy["cases"].empty());
  for (const Json& c : greedy["cases"]) {
    const std::string prompt = c["prompt"];
    // As llama-completion: add_special and parse_special on.
    EXPECT_EQ(encode(t, prompt, true, true), c["prompt_token_ids"].get<Ids>()) << prompt;
    // The continuation text is llama.cpp's token_to_piece(special = false), concatenated: what a
    // continuation stream gives.
    std::string text, streamed;
    tokenizer::StreamingDecoder stream(t, tokenizer::StreamOptions{false, true});
    for (int32_t id : c["continuation_token_ids"].get<Ids>()) {
      text += t.token_to_piece(id);
      streamed += stream.push(id);
    }
    streamed += stream.flush();
    EXPECT_EQ(text, c["continuation_text"].get<std::string>());
    EXPECT_EQ(streamed, text);
    // The whole sequence decodes as llama-completion prints it: the prompt with its leading space.
    Ids all = c["prompt_token_ids"].get<Ids>();
    for (int32_t id : c["continuation_token_ids"].get<Ids>()) all.push_back(id);
    EXPECT_EQ(t.decode(all), " " + prompt + text);
  }
}

TEST_F(GgufVocabFixtures, LlamaSpmVectors) {
  std::vector<std::string> lossy;
  const int round_trips = check_vocab_vectors("llama-spm", &lossy);
  // SentencePiece with byte fallback and no normalization: llama.cpp's decode gives every text back.
  EXPECT_EQ(round_trips, 46);
  for (const std::string& s : lossy) ADD_FAILURE() << "does not round-trip: '" << s << "'";
}

TEST_F(GgufVocabFixtures, Phi3Vectors) {
  const int round_trips = check_vocab_vectors("phi-3", nullptr);
  EXPECT_EQ(round_trips, 46);
}

// tokenizers/hf/<name>/cases.json through the matching llama.cpp GGUF vocabulary, with special
// parsing on and no BOS (how the README's llama.cpp cross-check ran); where llama.cpp differs from
// HF tokenizers the case lists llama.cpp's ids under llamacpp_differs, and glass follows llama.cpp
// (llama2 special_mistral: HF matches the normalized "▁<s>", so "[INST]" after "<s>" and "</s>"
// after a non-space stay text there).
void check_hf_cases(const std::filesystem::path& fixtures, const std::string& hf, const std::string& gguf) {
  const Tokenizer t = load_tokenizer(fixtures / "tokenizers" / "gguf" / ("ggml-vocab-" + gguf + ".gguf"));
  const Json cases = read_json(fixtures / "tokenizers" / "hf" / hf / "cases.json")["cases"];
  ASSERT_EQ(cases.size(), 65u);
  for (const Json& c : cases) {
    const std::string text = c["text"];
    const Ids expected =
        c.contains("llamacpp_differs") ? c["llamacpp_differs"]["ids"].get<Ids>() : c["ids"].get<Ids>();
    EXPECT_EQ(encode(t, text, false, true), expected) << hf << " case " << c["name"];
    // llama.cpp's detokenizer with special tokens rendered agrees with HF's decode on these sets.
    EXPECT_EQ(t.decode(c["ids"].get<Ids>(), true), c["decode"].get<std::string>())
        << hf << " case " << c["name"];
  }
}

TEST_F(GgufVocabFixtures, Llama2HfCasesAsLlamaCpp) { check_hf_cases(fixtures_, "llama2", "llama-spm"); }
TEST_F(GgufVocabFixtures, Phi3HfCasesAsLlamaCpp) { check_hf_cases(fixtures_, "phi3_mini", "phi-3"); }

TEST_F(GgufVocabFixtures, Phi3SpecialTokens) {
  Result<tokenizer::Vocab> v = load_vocab(vocab_gguf("phi-3"));
  ASSERT_TRUE(v.ok()) << v.error().message;
  // <|end|> (32007) and <|endoftext|> (32000, eos) end generation; "</s>" (2) is promoted to control
  // and joins them; <|user|> swallows the whitespace after it (llama.cpp's Phi-3 rule), <s> does not.
  EXPECT_EQ(v->eos_id, 32000);
  EXPECT_EQ(v->pad_id, 32000);
  EXPECT_EQ(v->eog_ids, (Ids{2, 32000, 32007}));
  EXPECT_EQ(v->types[2], TokenType::Control);
  ASSERT_EQ(v->strip.size(), v->tokens.size());
  EXPECT_EQ(v->strip[32010], tokenizer::kStripRight);
  EXPECT_EQ(v->strip[2], tokenizer::kStripRight);
  EXPECT_EQ(v->strip[1], tokenizer::kStripNone);
  EXPECT_EQ(v->strip[32000], tokenizer::kStripNone);
  const Tokenizer t = load_tokenizer(vocab_gguf("phi-3"));
  EXPECT_EQ(encode(t, "<|user|>\nHi<|end|>\n<|assistant|>\n", false, true), (Ids{32010, 6324, 32007, 32001}));
}

TEST_F(GgufVocabFixtures, EveryFixtureModelIsSupported) {
  // Byte-level BPE and WordPiece vocabularies load now; their vectors are in gguf_vocab_vectors_test.
  for (const char* name : {"gpt-2", "starcoder", "bert-bge"}) {
    Result<tokenizer::Vocab> v = load_vocab(vocab_gguf(name));
    ASSERT_TRUE(v.ok()) << name << ": " << v.error().message;
    EXPECT_TRUE(Tokenizer::create(std::move(v).value()).ok()) << name;
  }
}

// Small vocabularies written with the test GGUF writer: defaults, "none" ids and errors.
class GgufVocabMetadata : public ::testing::Test {
 protected:
  using W = test::GgufWriter;
  W base() {
    W w;
    w.kv("general.architecture", W::string("llama"));
    w.kv("tokenizer.ggml.model", W::string("llama"));
    w.kv("tokenizer.ggml.tokens", W::string_array({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", ""}));
    return w;
  }
  Result<tokenizer::Vocab> load(const W& w) {
    const auto path = test::write_temp_file(w.build().bytes, "vocab.gguf");
    return load_vocab(path);
  }
  void expect_error(const W& w, ErrorCode code, const std::string& needle) {
    Result<tokenizer::Vocab> v = load(w);
    ASSERT_FALSE(v.ok()) << needle;
    EXPECT_EQ(v.error().code, code);
    EXPECT_NE(v.error().message.find(needle), std::string::npos) << v.error().message;
  }
};

TEST_F(GgufVocabMetadata, DefaultsFollowLlamaCpp) {
  Result<tokenizer::Vocab> v = load(base());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->scores, std::vector<float>(6, 0.0f));
  for (size_t i : {0u, 1u, 3u, 4u, 5u}) EXPECT_EQ(v->types[i], TokenType::Normal) << i;  // no token_type key
  EXPECT_EQ(v->tokens[5], "[EMPTY_5]");
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_EQ(v->pad_id, -1);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  // "</s>" is an end-of-generation text: promoted to Control.
  EXPECT_EQ(v->eog_ids, Ids{2});
  EXPECT_EQ(v->types[2], TokenType::Control);
  EXPECT_TRUE(Tokenizer::create(std::move(v).value()).ok());
}

TEST_F(GgufVocabMetadata, ExplicitValues) {
  W w = base();
  w.kv("tokenizer.ggml.scores", W::f32_array({0, 0, 0, -1, -2, -3}));
  w.kv("tokenizer.ggml.token_type", W::i32_array({2, 3, 3, 1, 1, 9}));
  w.kv("tokenizer.ggml.bos_token_id", W::u32(0xFFFFFFFFu));
  w.kv("tokenizer.ggml.eos_token_id", W::u32(4));
  w.kv("tokenizer.ggml.unknown_token_id", W::i32(-1));
  w.kv("tokenizer.ggml.padding_token_id", W::u32(6));  // out of range: ignored, as llama.cpp does
  w.kv("tokenizer.ggml.eot_token_id", W::u32(3));
  w.kv("tokenizer.ggml.add_bos_token", W::boolean(false));
  w.kv("tokenizer.ggml.add_eos_token", W::boolean(true));
  w.kv("tokenizer.ggml.add_space_prefix", W::boolean(false));
  Result<tokenizer::Vocab> v = load(w);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->scores[4], -2.0f);
  EXPECT_EQ(v->types[0], TokenType::Unknown);
  EXPECT_EQ(v->types[5], TokenType::Undefined);  // unknown type numbers read as Undefined
  EXPECT_EQ(v->bos_id, -1);
  EXPECT_EQ(v->eos_id, 4);
  EXPECT_EQ(v->unk_id, -1);
  EXPECT_EQ(v->pad_id, -1);
  EXPECT_FALSE(v->add_bos);
  EXPECT_TRUE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->eog_ids, (Ids{2, 3, 4}));
  Result<Tokenizer> t = Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("a", true, false).value(), (Ids{4, 4}));  // "a" then EOS (also id 4)
}

TEST_F(GgufVocabMetadata, IntegerScoresAreAccepted) {
  W w = base();
  w.kv("tokenizer.ggml.scores", W::i32_array({0, 0, 0, -1, -2, -3}));
  Result<tokenizer::Vocab> v = load(w);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->scores[5], -3.0f);
}

TEST_F(GgufVocabMetadata, BadMetadataNamesTheKey) {
  {
    W w = base();
    w.kv("tokenizer.ggml.scores", W::f32_array({0, 0}));
    expect_error(w, ErrorCode::InvalidFile, "'tokenizer.ggml.scores': 2 values for 6 tokens");
  }
  {
    W w = base();
    w.kv("tokenizer.ggml.token_type", W::i32_array({1, 1, 1, 1, 1, 1, 1}));
    expect_error(w, ErrorCode::InvalidFile, "'tokenizer.ggml.token_type': 7 values for 6 tokens");
  }
  {
    W w = base();
    w.kv("tokenizer.ggml.bos_token_id", W::u32(6));
    expect_error(w, ErrorCode::InvalidFile,
                 "'tokenizer.ggml.bos_token_id': token id 6 is out of range [0, 6)");
  }
  {
    W w = base();
    w.kv("tokenizer.ggml.eom_token_id", W::u32(100));
    expect_error(w, ErrorCode::InvalidFile, "tokenizer.ggml.eom_token_id");
  }
  {
    W w = base();
    w.kv("tokenizer.ggml.scores", W::string_array({"a", "b", "c", "d", "e", "f"}));
    expect_error(w, ErrorCode::InvalidFile, "tokenizer.ggml.scores");
  }
  {
    W w = base();
    w.kv("tokenizer.ggml.add_bos_token", W::u32(1));
    expect_error(w, ErrorCode::InvalidFile, "tokenizer.ggml.add_bos_token");
  }
  {
    W w;
    w.kv("tokenizer.ggml.model", W::string("llama"));
    expect_error(w, ErrorCode::InvalidFile, "tokenizer.ggml.tokens");
  }
  {
    W w;
    w.kv("general.architecture", W::string("llama"));
    expect_error(w, ErrorCode::InvalidFile, "tokenizer.ggml.model");
  }
  {
    W w;
    w.kv("tokenizer.ggml.model", W::string("t5"));
    expect_error(w, ErrorCode::Unsupported, "model 't5' (Unigram) is not supported yet");
  }
  {
    W w;
    w.kv("tokenizer.ggml.model", W::string("llama"));
    w.kv("tokenizer.ggml.tokens", W::string_array({"a", "b", "a"}));
    Result<tokenizer::Vocab> v = load(w);
    ASSERT_TRUE(v.ok()) << v.error().message;  // duplicates are the tokenizer's to reject
    Result<Tokenizer> t = Tokenizer::create(std::move(v).value());
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("tokens 0 and 2 have the same text 'a'"), std::string::npos);
  }
}

}  // namespace
}  // namespace glass::formats
