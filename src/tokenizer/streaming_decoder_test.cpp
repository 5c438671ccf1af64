// StreamingDecoder: never emits a broken UTF-8 sequence when the stream is valid, and its output
// always concatenates to Tokenizer::decode.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace glass::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

// RFC 3629 validity (no overlongs, surrogates or code points past U+10FFFF).
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<uint8_t>(s[i]);
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<uint8_t>(s[i + k]);
      if (k == 1 ? (d < lo || d > hi) : (d & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

Tokenizer make_tokenizer() {
  Vocab v;
  v.model = "llama";
  auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(0);
    v.types.push_back(type);
  };
  add("<unk>", TokenType::Unknown);
  add("<s>", TokenType::Control);
  add("</s>", TokenType::Control);
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", TokenType::Byte);
  for (const char* t :
       {"\xE2\x96\x81", "\xE2\x96\x81h\xC3\xA9", "llo", "\xE2\x96\x81w", "\xE2\x82\xAC", "x"}) {
    add(t, TokenType::Normal);
  }
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  auto t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

std::string stream(const Tokenizer& t, const Ids& ids, bool special, std::vector<std::string>* parts) {
  StreamingDecoder d(t, StreamOptions{special, false});
  std::string all;
  for (int32_t id : ids) {
    std::string p = d.push(id);
    if (parts) parts->push_back(p);
    all += p;
  }
  std::string tail = d.flush();
  if (parts) parts->push_back(tail);
  return all + tail;
}

TEST(StreamingDecoder, HoldsBackSplitCharacters) {
  const Tokenizer t = make_tokenizer();
  const int32_t b0 = 3;
  // "😀" as four byte tokens: nothing comes out until the last byte.
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(b0 + 0xF0), "");
  EXPECT_EQ(d.push(b0 + 0x9F), "");
  EXPECT_EQ(d.push(b0 + 0x98), "");
  EXPECT_EQ(d.push(b0 + 0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(b0 + 'a'), "a");
  // "é" split across tokens, with a complete character before it in the same piece.
  EXPECT_EQ(d.push(b0 + 0xC3), "");
  EXPECT_EQ(d.push(b0 + 0xA9), "\xC3\xA9");
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDecoder, PassesInvalidBytesThrough) {
  const Tokenizer t = make_tokenizer();
  const int32_t b0 = 3;
  StreamingDecoder d(t);
  EXPECT_EQ(d.push(b0 + 0xFF), "\xFF");      // can never start a sequence
  EXPECT_EQ(d.push(b0 + 0x80), "\x80");      // lone continuation byte
  EXPECT_EQ(d.push(b0 + 0xE0), "");          // may start one...
  EXPECT_EQ(d.push(b0 + 0x80), "\xE0\x80");  // ...but E0 80 is overlong: released at once
  EXPECT_EQ(d.push(b0 + 0xC3), "");
  EXPECT_EQ(d.flush(), "\xC3");  // an unfinished sequence comes out at the end
}

TEST(StreamingDecoder, FirstTokenSpaceRuleMatchesDecode) {
  const Tokenizer t = make_tokenizer();
  const Ids ids = t.encode("h\xC3\xA9llo world", true, false).value();
  EXPECT_EQ(t.decode(ids), " h\xC3\xA9llo world");  // BOS takes the first-token rule, as in llama.cpp
  EXPECT_EQ(stream(t, ids, false, nullptr), t.decode(ids));
  const Ids no_bos(ids.begin() + 1, ids.end());
  EXPECT_EQ(t.decode(no_bos), "h\xC3\xA9llo world");
  EXPECT_EQ(stream(t, no_bos, false, nullptr), "h\xC3\xA9llo world");
  EXPECT_EQ(stream(t, ids, true, nullptr), "<s> h\xC3\xA9llo world");

  // A continuation (generation after a prompt) keeps every piece's space.
  StreamingDecoder c(t, StreamOptions{false, true});
  std::string all;
  for (size_t i = 1; i < ids.size(); ++i) all += c.push(ids[i]);
  all += c.flush();
  EXPECT_EQ(all, " h\xC3\xA9llo world");
}

TEST(StreamingDecoder, RandomStreamsMatchDecodeAndStayValid) {
  const Tokenizer t = make_tokenizer();
  std::mt19937 rng(1234);
  const std::vector<std::string> texts = {"h\xC3\xA9llo w\xE2\x82\xAC x",
                                          "\xF0\x9F\x98\x80\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9",
                                          "\xE4\xBD\xA0\xE5\xA5\xBD, \xD0\xBC\xD0\xB8\xD1\x80",
                                          "caf\xC3\xA9 \xE2\x82\xAC\xE2\x82\xAC 3 \xCE\xB1\xCE\xB2"};
  std::uniform_int_distribution<int> pick_text(0, static_cast<int>(texts.size()) - 1);
  std::uniform_int_distribution<int> pick_special(0, 9);
  for (int iter = 0; iter < 200; ++iter) {
    // A valid-UTF-8 stream: encodings of valid texts, with control tokens mixed in.
    Ids ids;
    for (int k = 0; k < 4; ++k) {
      const Ids part = t.encode(texts[static_cast<size_t>(pick_text(rng))], k == 0, false).value();
      ids.insert(ids.end(), part.begin(), part.end());
      if (pick_special(rng) == 0) ids.push_back(2);
    }
    for (bool special : {false, true}) {
      std::vector<std::string> parts;
      const std::string all = stream(t, ids, special, &parts);
      EXPECT_EQ(all, t.decode(ids, special));
      for (const std::string& p : parts) EXPECT_TRUE(valid_utf8(p)) << "iteration " << iter;
    }
  }
  // Arbitrary ids (also invalid UTF-8 and out-of-range ids): concatenation still equals decode.
  std::uniform_int_distribution<int32_t> any_id(-3, t.vocab_size() + 3);
  for (int iter = 0; iter < 200; ++iter) {
    Ids ids(static_cast<size_t>(iter % 17));
    for (int32_t& id : ids) id = any_id(rng);
    EXPECT_EQ(stream(t, ids, iter % 2 == 0, nullptr), t.decode(ids, iter % 2 == 0));
  }
}

// Issue 29: a stream of bytes that never complete a character (a hostile model generating
// continuation bytes) is not held forever: re-decoding a growing window at every push would be
// quadratic. What comes out is what decoding the whole stream gives, and it comes out on the way.
TEST(StreamingDecoder, HfStreamOfBrokenBytesIsNotHeldForever) {
  const std::string json = R"({"model": {"type": "BPE", "byte_fallback": true,
      "vocab": {"<unk>": 0, "<0x80>": 1, "a": 2, "<s>": 3}, "merges": []},
      "added_tokens": [{"id": 3, "content": "<s>", "special": true}],
      "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}})";
  auto tok = hf_tokenizer_from_json(json, "");
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  for (int32_t id : {1, 3}) {  // continuation bytes; special tokens that decode to nothing
    std::vector<int32_t> ids(5000, id);
    ids.push_back(2);
    StreamingDecoder stream(*tok);
    std::string before_flush;
    size_t pushes_with_output = 0;
    for (int32_t i : ids) {
      const std::string piece = stream.push(i);
      pushes_with_output += piece.empty() ? 0 : 1;
      before_flush += piece;
    }
    EXPECT_EQ(before_flush + stream.flush(), tok->decode(ids)) << id;
    if (id == 1) {
      EXPECT_GT(pushes_with_output, 100u) << "the stream was held back until the end";
    }
    EXPECT_EQ(before_flush.substr(before_flush.size() - 1), "a") << id;
  }
}

}  // namespace
}  // namespace glass::tokenizer
