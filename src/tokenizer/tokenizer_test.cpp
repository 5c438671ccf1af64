// Tokenizer on tiny hand-built SentencePiece vocabularies: merge order, space prefix, byte and unk
// fallback, special tokens, pieces and decode, validation. Real vocabularies and llama.cpp's vectors
// are checked in formats/gguf_vocab_test.cpp.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <string>
#include <vector>

namespace glass::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

constexpr int32_t kUnk = 0, kBos = 1, kEos = 2;
constexpr int32_t kByte0 = 3;  // <0x00> .. <0xFF> are ids 3 .. 258
constexpr int32_t byte_id(int b) { return kByte0 + b; }

struct Builder {
  Vocab v;
  explicit Builder(bool with_bytes = true) {
    v.model = "llama";
    add("<unk>", 0, TokenType::Unknown);
    add("<s>", 0, TokenType::Control);
    add("</s>", 0, TokenType::Control);
    if (with_bytes) {
      const char* hex = "0123456789ABCDEF";
      for (int b = 0; b < 256; ++b)
        add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 0, TokenType::Byte);
    }
    v.unk_id = kUnk;
    v.bos_id = kBos;
    v.eos_id = kEos;
    v.eog_ids = {kEos};
  }
  int32_t add(const std::string& text, float score, TokenType type = TokenType::Normal) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  }
  Tokenizer build() const {
    auto t = Tokenizer::create(v);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return std::move(t).value();
  }
};

Ids enc(const Tokenizer& t, std::string_view text, bool add_special = false, bool parse_special = false) {
  auto r = t.encode(text, add_special, parse_special);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Ids{};
}

TEST(SpmMerge, HighestScoreFirst) {
  Builder b;
  b.v.add_space_prefix = false;
  const int32_t a = b.add("a", -1), bb = b.add("b", -1), c = b.add("c", -1);
  const int32_t ab = b.add("ab", 1), bc = b.add("bc", 2);
  // "bc" outscores "ab", so b merges right and "a" is left alone.
  EXPECT_EQ(enc(b.build(), "abc"), (Ids{a, bc}));
  b.v.scores[static_cast<size_t>(ab)] = 3;
  EXPECT_EQ(enc(b.build(), "abc"), (Ids{ab, c}));
  const int32_t abc = b.add("abc", 0);
  // Once "ab" is formed, "ab"+"c" is a token: merges continue on the merged symbol.
  EXPECT_EQ(enc(b.build(), "abc"), (Ids{abc}));
  (void)bb;
}

TEST(SpmMerge, TiesGoToTheLeftmostPair) {
  Builder b;
  b.v.add_space_prefix = false;
  const int32_t a = b.add("a", -1), bb = b.add("b", -1), c = b.add("c", -1);
  const int32_t ab = b.add("ab", 1), bc = b.add("bc", 1), aa = b.add("aa", 1);
  const Tokenizer t = b.build();
  EXPECT_EQ(enc(t, "abc"), (Ids{ab, c}));
  EXPECT_EQ(enc(t, "aaa"), (Ids{aa, a}));
  EXPECT_EQ(enc(t, "aaaa"), (Ids{aa, aa}));
  EXPECT_EQ(enc(t, "aaaaa"), (Ids{aa, aa, a}));
  (void)bb;
  (void)bc;
}

TEST(SpmMerge, IntermediatePiecesNeedNotSurvive) {
  // "▁hello" is reached through "he", "ll", "llo", "hello"; a lower-scored "el" never wins.
  Builder b;
  for (const char* ch : {"\xE2\x96\x81", "h", "e", "l", "o", "w", "r", "d"}) b.add(ch, -10);
  b.add("el", -5);
  b.add("he", 5);
  b.add("ll", 4);
  b.add("llo", 3);
  b.add("hello", 2);
  const int32_t hello = b.add("\xE2\x96\x81hello", 1);
  const int32_t sp = b.add("\xE2\x96\x81w", 0);
  const Tokenizer t = b.build();
  EXPECT_EQ(enc(t, "hello"), (Ids{hello}));
  const Ids hw = enc(t, "hello world");
  ASSERT_GE(hw.size(), 2u);
  EXPECT_EQ(hw[0], hello);
  EXPECT_EQ(hw[1], sp);
  EXPECT_EQ(t.decode(hw), "hello world");
}

TEST(SpmSpacePrefix, AddedAtSegmentStartOnlyWhenConfigured) {
  Builder b;
  const int32_t sp = b.add("\xE2\x96\x81", 0);
  const int32_t x = b.add("x", 0);
  const int32_t spx = b.add("\xE2\x96\x81x", 1);
  EXPECT_EQ(enc(b.build(), "x"), (Ids{spx}));
  EXPECT_EQ(enc(b.build(), " x"), (Ids{sp, spx}));
  EXPECT_EQ(enc(b.build(), "x x"), (Ids{spx, spx}));
  EXPECT_EQ(enc(b.build(), ""), Ids{});
  EXPECT_EQ(enc(b.build(), "", true), Ids{kBos});
  b.v.add_space_prefix = false;
  EXPECT_EQ(enc(b.build(), "x"), (Ids{x}));
  EXPECT_EQ(enc(b.build(), "x x"), (Ids{x, spx}));
}

TEST(SpmFallback, UnknownCharactersBecomeByteTokens) {
  Builder b;
  b.add("\xE2\x96\x81", 0);
  const int32_t a = b.add("a", 0);
  const Tokenizer t = b.build();
  b.v.add_space_prefix = false;
  const Tokenizer np = b.build();
  // "é" is C3 A9; "😀" is F0 9F 98 80; each byte of an unknown character becomes its <0xXX> token.
  EXPECT_EQ(enc(np, "\xC3\xA9"), (Ids{byte_id(0xC3), byte_id(0xA9)}));
  EXPECT_EQ(enc(np,
                "a\xF0\x9F\x98\x80"
                "a"),
            (Ids{a, byte_id(0xF0), byte_id(0x9F), byte_id(0x98), byte_id(0x80), a}));
  // Invalid UTF-8 (a lone continuation byte, a truncated sequence) still round-trips through bytes.
  EXPECT_EQ(enc(np, "\x80"), (Ids{byte_id(0x80)}));
  EXPECT_EQ(enc(np, "a\xE2\x82"), (Ids{a, byte_id(0xE2), byte_id(0x82)}));
  EXPECT_EQ(t.decode(enc(t, "caf\xC3\xA9 \xF0\x9F\x98\x80!")), "caf\xC3\xA9 \xF0\x9F\x98\x80!");
  EXPECT_EQ(t.decode(enc(t, "\t\n\x01")), "\t\n\x01");
}

TEST(SpmFallback, UnkWhenThereAreNoByteTokens) {
  Builder b(/*with_bytes=*/false);
  b.v.add_space_prefix = false;
  const int32_t a = b.add("a", 0);
  const Tokenizer t = b.build();
  // One unk per character that has no token, however many bytes it has.
  EXPECT_EQ(enc(t,
                "a\xC3\xA9z\xF0\x9F\x98\x80"
                "a"),
            (Ids{a, kUnk, kUnk, kUnk, a}));
  EXPECT_EQ(t.decode({a, kUnk, a}), "aa");
  EXPECT_EQ(t.decode({a, kUnk, a}, true), "a<unk>a");

  b.v.unk_id = -1;
  auto r = b.build().encode("az", false, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(r.error().message.find("0x7A"), std::string::npos) << r.error().message;
}

TEST(SpmFallback, RawByteTextTokensServeWhenThereIsNoHexForm) {
  Builder b(/*with_bytes=*/false);
  b.v.add_space_prefix = false;
  const int32_t x = b.add("x", 0);
  const int32_t raw = b.add("\xC3", 0, TokenType::Normal);
  const int32_t raw2 = b.add("\xA9", 0, TokenType::Normal);
  EXPECT_EQ(enc(b.build(), "x\xC3\xA9"), (Ids{x, raw, raw2}));
}

TEST(Special, BosEosFollowTheVocab) {
  Builder b;
  const int32_t spx = b.add("\xE2\x96\x81x", 1);
  b.add("x", 0);
  EXPECT_EQ(enc(b.build(), "x", true), (Ids{kBos, spx}));
  b.v.add_eos = true;
  EXPECT_EQ(enc(b.build(), "x", true), (Ids{kBos, spx, kEos}));
  EXPECT_EQ(enc(b.build(), "x", false), (Ids{spx}));
  b.v.add_bos = false;
  EXPECT_EQ(enc(b.build(), "x", true), (Ids{spx, kEos}));
}

TEST(Special, ControlTokensSplitOnlyWithParseSpecial) {
  Builder b;
  const int32_t sp = b.add("\xE2\x96\x81", 0);
  const int32_t x = b.add("x", 0);
  const int32_t spx = b.add("\xE2\x96\x81x", 1);
  const Tokenizer t = b.build();
  // A text fragment after a special token starts a new segment and gets the space prefix.
  EXPECT_EQ(enc(t, "x</s>x", false, true), (Ids{spx, kEos, spx}));
  EXPECT_EQ(enc(t, "<s>x", false, true), (Ids{kBos, spx}));
  EXPECT_EQ(enc(t, "</s> x", false, true), (Ids{kEos, sp, spx}));
  EXPECT_EQ(enc(t, "<s><s>", false, true), (Ids{kBos, kBos}));
  EXPECT_EQ(enc(t, "<unk>", false, true), (Ids{kUnk}));
  // Without parse_special the text is plain characters (here all bytes).
  const Ids plain = enc(t, "<s>", false, false);
  EXPECT_EQ(plain, (Ids{sp, byte_id('<'), byte_id('s'), byte_id('>')}));
  EXPECT_EQ(t.decode(plain), "<s>");
  (void)x;
}

TEST(Special, UserDefinedTokensAlwaysSplitAndLongestWins) {
  Builder b;
  b.add("\xE2\x96\x81", 0);
  const int32_t x = b.add("x", 0);
  const int32_t spx = b.add("\xE2\x96\x81x", 1);
  const int32_t tag = b.add("<tag>", 0, TokenType::UserDefined);
  const int32_t tag2 = b.add("<tag><tag>", 0, TokenType::UserDefined);
  const Tokenizer t = b.build();
  EXPECT_EQ(enc(t, "x<tag>x", false, false), (Ids{spx, tag, spx}));
  EXPECT_EQ(enc(t, "<tag><tag><tag>", false, false), (Ids{tag2, tag}));
  EXPECT_EQ(t.token_to_piece(tag), "<tag>");  // user-defined tokens always render
  (void)x;
}

TEST(Special, StripFlagsSwallowWhitespace) {
  Builder b;
  const int32_t sp = b.add("\xE2\x96\x81", 0);
  const int32_t spx = b.add("\xE2\x96\x81x", 1);
  b.add("x", 0);
  const int32_t user = b.add("<|user|>", 0, TokenType::Control);
  b.v.strip.assign(b.v.tokens.size(), kStripNone);
  b.v.strip[static_cast<size_t>(user)] = kStripRight;
  const Tokenizer r = b.build();
  EXPECT_EQ(enc(r, "x <|user|>\n x", false, true), (Ids{spx, sp, user, spx}));
  EXPECT_EQ(enc(r, "<|user|> \n", false, true), (Ids{user}));
  b.v.strip[static_cast<size_t>(user)] = kStripLeft;
  EXPECT_EQ(enc(b.build(), "x \t<|user|> x", false, true), (Ids{spx, user, sp, spx}));
}

TEST(Pieces, TokenToPieceFollowsTokenTypes) {
  Builder b;
  const int32_t sp = b.add("\xE2\x96\x81hi\xE2\x96\x81", 0);
  const int32_t unused = b.add("[unused]", 0, TokenType::Unused);
  const Tokenizer t = b.build();
  EXPECT_EQ(t.token_to_piece(kBos), "");
  EXPECT_EQ(t.token_to_piece(kBos, true), "<s>");
  EXPECT_EQ(t.token_to_piece(kEos, true), "</s>");
  EXPECT_EQ(t.token_to_piece(kUnk), "");
  EXPECT_EQ(t.token_to_piece(kUnk, true), "<unk>");
  EXPECT_EQ(t.token_to_piece(byte_id(0x0A)), "\n");
  EXPECT_EQ(t.token_to_piece(byte_id(0xE9)), "\xE9");
  EXPECT_EQ(t.token_to_piece(byte_id(0x00)), std::string(1, '\0'));
  EXPECT_EQ(t.token_to_piece(sp), " hi ");
  EXPECT_EQ(t.token_to_piece(unused, true), "");
  EXPECT_EQ(t.token_to_piece(-1), "");
  EXPECT_EQ(t.token_to_piece(t.vocab_size()), "");
  EXPECT_EQ(t.token_to_piece(1 << 30, true), "");
}

TEST(Pieces, DecodeStripsOneLeadingSpaceFromTheFirstToken) {
  Builder b;
  const int32_t hi = b.add("\xE2\x96\x81hi", 0);
  const int32_t sp = b.add("\xE2\x96\x81", 0);
  const Tokenizer t = b.build();
  EXPECT_EQ(t.decode({hi, hi}), "hi hi");
  EXPECT_EQ(t.decode({sp, hi}), " hi");
  // As in llama.cpp, a leading BOS consumes the first-token rule even though it renders as nothing.
  EXPECT_EQ(t.decode({kBos, hi}), " hi");
  EXPECT_EQ(t.decode({kBos, hi}, true), "<s> hi");
  EXPECT_EQ(t.decode({hi, kEos, hi}, true), "hi</s> hi");
  EXPECT_EQ(t.decode({}), "");
  // An out-of-range id renders as nothing, and like a hidden BOS it is the first token.
  EXPECT_EQ(t.decode({-5, hi, 1 << 30}), " hi");
  EXPECT_EQ(t.decode({hi, -5, 1 << 30}), "hi");
  b.v.add_space_prefix = false;
  EXPECT_EQ(b.build().decode({hi}), " hi");
}

TEST(Tokenizer, AccessorsAndEog) {
  Builder b;
  const int32_t eot = b.add("<|eot|>", 0, TokenType::Control);
  b.v.eog_ids = {kEos, eot};
  const Tokenizer t = b.build();
  EXPECT_EQ(t.bos_id(), kBos);
  EXPECT_EQ(t.eos_id(), kEos);
  EXPECT_EQ(t.vocab_size(), static_cast<int32_t>(b.v.tokens.size()));
  EXPECT_TRUE(t.add_bos());
  EXPECT_TRUE(t.is_eog(kEos));
  EXPECT_TRUE(t.is_eog(eot));
  EXPECT_FALSE(t.is_eog(kBos));
  EXPECT_FALSE(t.is_eog(-1));
  const Tokenizer copy = t;  // copies share the immutable state
  EXPECT_EQ(&copy.vocab(), &t.vocab());
}

TEST(Tokenizer, CreateRejectsBadVocabularies) {
  auto expect_error = [](Vocab v, ErrorCode code, const std::string& needle) {
    auto r = Tokenizer::create(std::move(v));
    ASSERT_FALSE(r.ok()) << needle;
    EXPECT_EQ(r.error().code, code);
    EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  };
  const Vocab good = Builder().v;
  ASSERT_TRUE(Tokenizer::create(good).ok());

  Vocab v = good;
  v.model = "t5";
  expect_error(v, ErrorCode::Unsupported, "model 't5' (Unigram) is not supported yet");
  v = good;
  v.model = "gpt2";
  v.pre = "gpt-2";
  expect_error(v, ErrorCode::InvalidArgument, "a BPE vocabulary needs merges");
  v.pre = "no-such-pre";
  v.merges = {{"a", "b"}};
  expect_error(v, ErrorCode::Unsupported, "unknown pre-tokenizer type 'no-such-pre'");
  v = good;
  v.scores.pop_back();
  expect_error(v, ErrorCode::InvalidArgument, "scores");
  v = good;
  v.types.push_back(TokenType::Normal);
  expect_error(v, ErrorCode::InvalidArgument, "token types");
  v = good;
  v.strip = {1, 2};
  expect_error(v, ErrorCode::InvalidArgument, "strip");
  v = good;
  v.bos_id = static_cast<int32_t>(v.tokens.size());
  expect_error(v, ErrorCode::InvalidArgument, "bos_id");
  v = good;
  v.unk_id = -2;
  expect_error(v, ErrorCode::InvalidArgument, "unk_id");
  v = good;
  v.eog_ids = {9999};
  expect_error(v, ErrorCode::InvalidArgument, "end-of-generation id 9999");
  v = good;
  v.tokens.set(5, "<0x00>");
  expect_error(v, ErrorCode::InvalidArgument, "tokens 3 and 5 have the same text");
  v = good;
  v.tokens.set(5, "");
  expect_error(v, ErrorCode::InvalidArgument, "token 5 has empty text");
  v = good;
  v.scores[4] = std::numeric_limits<float>::quiet_NaN();
  expect_error(v, ErrorCode::InvalidArgument, "NaN");
  v = good;
  v.types[4] = static_cast<TokenType>(42);
  expect_error(v, ErrorCode::InvalidArgument, "type 42");
  v = good;
  v.bos_id = -1;
  expect_error(v, ErrorCode::InvalidArgument, "add_bos");
  v = good;
  v.tokens.clear();
  v.scores.clear();
  v.types.clear();
  v.bos_id = v.eos_id = v.unk_id = -1;
  v.eog_ids.clear();
  expect_error(v, ErrorCode::InvalidArgument, "no tokens");
}

TEST(Tokenizer, LongInputsEncodeInNearLinearTime) {
  Builder b;
  b.add("\xE2\x96\x81", 0);
  const int32_t a = b.add("a", 0);
  const int32_t aa = b.add("aa", 1);
  const int32_t aaaa = b.add("aaaa", 2);
  const Tokenizer t = b.build();
  b.v.add_space_prefix = false;
  const Tokenizer np = b.build();
  const std::string text(200001, 'a');
  const auto start = std::chrono::steady_clock::now();
  const Ids ids = enc(np, text);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(ids.size(), 50001u);
  EXPECT_EQ(ids.front(), aaaa);
  EXPECT_EQ(ids.back(), a);
  EXPECT_LT(seconds, 20.0);  // quadratic merging would take far longer; generous for sanitizer builds
  EXPECT_EQ(t.decode(enc(t, text)), text);
  (void)aa;
}

}  // namespace
}  // namespace glass::tokenizer
