// llama.cpp's test-tokenizer-0 vectors for every vocabulary in fixtures/tokenizers/gguf/ (BPE with each
// pre-tokenizer family, SentencePiece, WordPiece): 46 cases each, no BOS, special parsing off, ids
// identical. Byte-level BPE vocabularies also decode every case back to its text, streamed or not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/gguf_vocab.h"
#include "support/fixtures.h"
#include "support/vocab_cases.h"
#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

using Ids = std::vector<int32_t>;
using tokenizer::Tokenizer;

Result<Tokenizer> load(const std::filesystem::path& path) {
  Result<GgufFile> file = GgufFile::open(path);
  if (!file) return file.error();
  Result<tokenizer::Vocab> vocab = vocab_from_gguf(*file);
  if (!vocab) return vocab.error();
  return Tokenizer::create(std::move(vocab).value());
}

class GgufVectors : public test::WithSharedFixtures, public ::testing::WithParamInterface<const char*> {
 protected:
  std::filesystem::path gguf() const {
    return fixtures_ / "tokenizers" / "gguf" / (std::string("ggml-vocab-") + GetParam() + ".gguf");
  }
};

TEST_P(GgufVectors, IdsMatchLlamaCpp) {
  Result<Tokenizer> t = load(gguf());
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto cases = test::read_vocab_cases(gguf().string() + ".inp");
  ASSERT_EQ(cases.size(), 46u);
  int passed = 0;
  for (const test::VocabCase& c : cases) {
    Result<Ids> ids = t->encode(c.text, false, false);
    ASSERT_TRUE(ids.ok()) << ids.error().message;
    if (*ids == c.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " text '" << c.text << "'\n  got      " << ::testing::PrintToString(*ids)
                    << "\n  expected " << ::testing::PrintToString(c.ids);
    }
  }
  EXPECT_EQ(passed, 46) << GetParam();
  RecordProperty("cases_passed", passed);
}

// SentencePiece and WordPiece decodes may differ from the text (README); byte-level BPE ones may not.
class GgufByteLevel : public GgufVectors {};

TEST_P(GgufByteLevel, DecodesBackToTheText) {
  Result<Tokenizer> t = load(gguf());
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->vocab().model, "gpt2");
  for (const test::VocabCase& c : test::read_vocab_cases(gguf().string() + ".inp")) {
    EXPECT_EQ(t->decode(c.ids), c.text);
    std::string streamed;
    tokenizer::StreamingDecoder stream(*t);
    for (int32_t id : c.ids) streamed += stream.push(id);
    streamed += stream.flush();
    EXPECT_EQ(streamed, c.text);
    // llama.cpp's detokenizer clean-up, when asked for, is its three passes over that text.
    if (t->clean_up() == tokenizer::CleanUp::LlamaCpp) {
      EXPECT_EQ(t->decode(c.ids, tokenizer::DecodeOptions{false, true}),
                tokenizer::clean_up_llama_cpp(c.text));
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<const char*>& p) {
  std::string name = p.param;
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufVectors,
                         ::testing::Values("bert-bge", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",
                                           "llama-spm", "mpt", "phi-3", "refact", "starcoder"),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Fixtures, GgufByteLevel,
                         ::testing::Values("deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "mpt",
                                           "refact", "starcoder"),
                         param_name);

class GgufSpecial : public test::WithSharedFixtures {
 protected:
  Tokenizer tokenizer(const char* name) {
    Result<Tokenizer> t =
        load(fixtures_ / "tokenizers" / "gguf" / (std::string("ggml-vocab-") + name + ".gguf"));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    if (!t) std::abort();
    return std::move(t).value();
  }
};

TEST_F(GgufSpecial, BosAndSeparatorsAsLlamaCpp) {
  // deepseek-coder asks for BOS (32013); gpt-2 and falcon do not; bert-bge wraps in [CLS] ... [SEP].
  const Tokenizer coder = tokenizer("deepseek-coder");
  EXPECT_EQ(coder.encode("Hello", true, false).value().front(), 32013);
  EXPECT_TRUE(coder.add_bos());
  const Tokenizer gpt2 = tokenizer("gpt-2");
  EXPECT_EQ(gpt2.encode("Hello", true, false).value(), gpt2.encode("Hello", false, false).value());
  const Tokenizer bert = tokenizer("bert-bge");
  const Ids ids = bert.encode("Hello world", true, false).value();
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.front(), 101);
  EXPECT_EQ(ids.back(), 102);
  EXPECT_EQ(bert.decode(ids, true), "[CLS] hello world[SEP]");
}

TEST_F(GgufSpecial, ControlTokensNeedParseSpecial) {
  const Tokenizer gpt2 = tokenizer("gpt-2");
  EXPECT_EQ(gpt2.encode("<|endoftext|>", false, true).value(), Ids{50256});
  EXPECT_GT(gpt2.encode("<|endoftext|>", false, false).value().size(), 1u);
  // A control token renders only when asked for.
  EXPECT_EQ(gpt2.decode({50256}), "");
  EXPECT_EQ(gpt2.decode({50256}, true), "<|endoftext|>");
}

}  // namespace
}  // namespace glass::formats
