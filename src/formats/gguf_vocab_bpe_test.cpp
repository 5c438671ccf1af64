// GGUF BPE and WordPiece metadata on small written files: llama.cpp's per-model defaults, merges,
// pre-tokenizer names, and the errors malformed metadata gives.
#include <gtest/gtest.h>

#include <optional>

#include "formats/gguf_vocab.h"
#include "support/gguf_writer.h"
#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

using W = test::GgufWriter;
using Ids = std::vector<int32_t>;

Result<tokenizer::Vocab> load(const W& w) {
  const auto path = test::write_temp_file(w.build().bytes, "vocab.gguf");
  Result<GgufFile> file = GgufFile::open(path);
  if (!file) return file.error();
  return vocab_from_gguf(*file);
}

// A byte-level vocabulary: "h", "i", "Ġ", "hi", "Ġhi", "<|endoftext|>" (each part replaceable).
struct Gpt2 {
  std::string pre = "gpt-2";
  std::vector<std::string> tokens = {"h", "i", "\xC4\xA0", "hi", "\xC4\xA0hi", "<|endoftext|>"};
  std::optional<std::vector<std::string>> merges = std::vector<std::string>{"h i", "\xC4\xA0 hi"};
  std::optional<uint32_t> bos, eos;
  W build() const {
    W w;
    w.kv("tokenizer.ggml.model", W::string("gpt2"));
    w.kv("tokenizer.ggml.pre", W::string(pre));
    w.kv("tokenizer.ggml.tokens", W::string_array(tokens));
    w.kv("tokenizer.ggml.token_type", W::i32_array({1, 1, 1, 1, 1, 3}));
    if (merges) w.kv("tokenizer.ggml.merges", W::string_array(*merges));
    if (bos) w.kv("tokenizer.ggml.bos_token_id", W::u32(*bos));
    if (eos) w.kv("tokenizer.ggml.eos_token_id", W::u32(*eos));
    return w;
  }
};
W gpt2() { return Gpt2().build(); }

void expect_error(const W& w, ErrorCode code, const std::string& needle) {
  Result<tokenizer::Vocab> v = load(w);
  ASSERT_FALSE(v.ok()) << needle;
  EXPECT_EQ(v.error().code, code);
  EXPECT_NE(v.error().message.find(needle), std::string::npos) << v.error().message;
}

TEST(GgufVocabBpe, LoadsWithLlamaCppDefaults) {
  Result<tokenizer::Vocab> v = load(gpt2());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->pre, "gpt-2");
  ASSERT_EQ(v->merges.size(), 2u);
  EXPECT_EQ(v->merges[1], (tokenizer::MergeList::Merge{"\xC4\xA0", "hi"}));
  EXPECT_EQ(v->bos_id, -1);  // the BPE default (11) is beyond these 6 tokens: none
  EXPECT_FALSE(v->add_bos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->eog_ids, Ids{5});  // "<|endoftext|>"
  Result<tokenizer::Tokenizer> t = tokenizer::Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("hi hi", false, false).value(), (Ids{3, 4}));
  EXPECT_EQ(t->decode({3, 4}), "hi hi");
  EXPECT_EQ(t->token_to_piece(4), " hi");
}

TEST(GgufVocabBpe, Llama3PreAddsBosByDefault) {
  Gpt2 g;
  g.pre = "llama-bpe";
  g.bos = 5;
  Result<tokenizer::Vocab> v = load(g.build());
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_TRUE(v->add_bos);
  Result<tokenizer::Tokenizer> t = tokenizer::Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("hi", true, false).value(), (Ids{5, 3}));
}

TEST(GgufVocabBpe, MalformedMetadataIsNamed) {
  Gpt2 g;
  g.merges.reset();
  expect_error(g.build(), ErrorCode::InvalidFile, "'tokenizer.ggml.merges': missing");
  g = Gpt2();
  g.merges = {"hi"};
  expect_error(g.build(), ErrorCode::InvalidFile, "merge 0 ('hi') has no space");
  g = Gpt2();
  g.pre = "made-up";
  expect_error(g.build(), ErrorCode::Unsupported, "unknown pre-tokenizer type 'made-up'");
  g = Gpt2();
  g.tokens[2] = "\xFF";
  expect_error(g.build(), ErrorCode::InvalidFile, "token 2 is not valid UTF-8");
  g = Gpt2();
  g.eos = 6;
  expect_error(g.build(), ErrorCode::InvalidFile,
               "'tokenizer.ggml.eos_token_id': token id 6 is out of range [0, 6)");
  {
    g = Gpt2();
    g.merges = {"h x"};
    Result<tokenizer::Vocab> v = load(g.build());
    ASSERT_TRUE(v.ok()) << v.error().message;
    Result<tokenizer::Tokenizer> t = tokenizer::Tokenizer::create(std::move(v).value());
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("merge 0 ('h' 'x'): 'x' is not in the vocabulary"), std::string::npos)
        << t.error().message;
  }
}

TEST(GgufVocabBpe, WordPieceDefaults) {
  W w;
  w.kv("tokenizer.ggml.model", W::string("bert"));
  std::vector<std::string> tokens;
  for (int i = 0; i < 104; ++i) tokens.push_back("[unused" + std::to_string(i) + "]");
  tokens.push_back("\xE2\x96\x81hello");
  tokens.push_back("ing");
  w.kv("tokenizer.ggml.tokens", W::string_array(tokens));
  Result<tokenizer::Vocab> v = load(w);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->bos_id, 101);
  EXPECT_EQ(v->sep_id, 102);
  EXPECT_EQ(v->unk_id, 100);
  EXPECT_TRUE(v->normalizer_lowercase);
  Result<tokenizer::Tokenizer> t = tokenizer::Tokenizer::create(std::move(v).value());
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->encode("HELLOing x", true, false).value(), (Ids{101, 104, 105, 100, 102}));
}

}  // namespace
}  // namespace glass::formats
