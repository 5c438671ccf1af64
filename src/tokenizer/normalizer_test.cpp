// Normalizers and decoders, read from tokenizer.json snippets the way the loader reads them, against
// the behaviour of HF tokenizers (tokenizers/src/normalizers, decoders; their unit tests' examples).
#include "tokenizer/normalizer.h"

#include <gtest/gtest.h>

#include "tokenizer/hf_json.h"

namespace glass::tokenizer {
namespace {

std::string normalize(const std::string& json, const std::string& text) {
  Result<Normalizer> n = hf::parse_normalizer(hf::Json::parse(json));
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
  if (!n) return {};
  Result<std::string> r = n->apply(text);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : std::string();
}

std::string decode(const std::string& json, std::vector<std::string> tokens) {
  Result<std::optional<Decoder>> d = hf::parse_decoder(hf::Json::parse(json));
  EXPECT_TRUE(d.ok() && d->has_value()) << (d.ok() ? "" : d.error().message);
  return d.ok() && d->has_value() ? (**d).decode(std::move(tokens)) : std::string();
}

TEST(Normalizer, UnicodeForms) {
  const std::string decomposed = "e\xCC\x81";  // e + COMBINING ACUTE
  EXPECT_EQ(normalize(R"({"type":"NFC"})", decomposed), "\xC3\xA9");
  EXPECT_EQ(normalize(R"({"type":"NFD"})", "\xC3\xA9"), decomposed);
  EXPECT_EQ(normalize(R"({"type":"NFKC"})", "\xEF\xAC\x81"), "fi");         // U+FB01 ligature
  EXPECT_EQ(normalize(R"({"type":"NFKD"})", "\xE2\x84\xAB"), "A\xCC\x8A");  // ANGSTROM SIGN
}

TEST(Normalizer, CaseAccentsAndSpaces) {
  EXPECT_EQ(normalize(R"({"type":"Lowercase"})", "HeLLo \xC3\x84 \xC4\xB0"), "hello \xC3\xA4 i\xCC\x87");
  EXPECT_EQ(normalize(R"({"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]})",
                      "Me llam\xC3\xB3"),
            "Me llamo");
  EXPECT_EQ(normalize(R"({"type":"Strip","strip_left":true,"strip_right":false})", " \t x \n"), "x \n");
  EXPECT_EQ(normalize(R"({"type":"Strip","strip_left":true,"strip_right":true})", "\xE3\x80\x80 x \xC2\xA0"),
            "x");
}

TEST(Normalizer, PrependAndReplace) {
  const std::string llama = R"({"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
      {"type":"Replace","pattern":{"String":" "},"content":"▁"}]})";
  EXPECT_EQ(normalize(llama, "Hey friend"), "▁Hey▁friend");
  EXPECT_EQ(normalize(llama, ""), "");  // Prepend leaves an empty segment alone
  EXPECT_EQ(normalize(R"({"type":"Replace","pattern":{"Regex":"\\s+"},"content":"_"})", "a \t b  c"),
            "a_b_c");
}

TEST(Normalizer, Bert) {
  const std::string bert = R"({"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,
      "strip_accents":null,"lowercase":true})";
  // Controls dropped (\x0b is a control here, not a space), whitespace -> ' ', CJK padded, accents gone.
  EXPECT_EQ(normalize(bert, "H\xC3\xA9llo\x01\tW\x0B!\xE4\xB8\xAD\xE6\x96\x87"),
            "hello w! \xE4\xB8\xAD  \xE6\x96\x87 ");
  const std::string keep = R"({"type":"BertNormalizer","lowercase":false})";
  EXPECT_EQ(normalize(keep, "H\xC3\xA9llo"), "H\xC3\xA9llo");
}

TEST(Normalizer, UnsupportedAndMalformed) {
  Result<Normalizer> p =
      hf::parse_normalizer(hf::Json::parse(R"({"type":"Precompiled","precompiled_charsmap":""})"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::Unsupported);
  EXPECT_NE(p.error().message.find("'Precompiled'"), std::string::npos);
  Result<Normalizer> bad = hf::parse_normalizer(hf::Json::parse(R"({"type":"Prepend","prepend":3})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(bad.error().message.find("normalizer: 'prepend' must be a string"), std::string::npos)
      << bad.error().message;
}

TEST(Decoder, ByteLevelAndFallback) {
  EXPECT_EQ(decode(R"({"type":"ByteLevel"})", {"Hello", "Ġworld", "Ċ"}), "Hello world\n");
  // An incomplete sequence becomes U+FFFD (Rust's from_utf8_lossy).
  EXPECT_EQ(decode(R"({"type":"ByteLevel"})", {"ðŁĺ"}), "\xEF\xBF\xBD");
  EXPECT_EQ(decode(R"({"type":"ByteFallback"})", {"<0xE2>", "<0x96>", "<0x81>", "x"}), "\xE2\x96\x81x");
  // Ill-formed byte runs: one U+FFFD per byte token.
  EXPECT_EQ(decode(R"({"type":"ByteFallback"})", {"<0xE2>", "<0x96>", "x"}), "\xEF\xBF\xBD\xEF\xBF\xBDx");
}

TEST(Decoder, SentencePieceChains) {
  const std::string llama2 =
      R"({"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
      {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]})";
  EXPECT_EQ(decode(llama2, {"▁Hello", "▁world", "<0x21>"}), "Hello world!");
  EXPECT_EQ(decode(llama2, {"▁", "▁x"}), " x");  // only one leading space goes
  // Metaspace drops the replacement in the first token (prepend_scheme always), else ' '.
  EXPECT_EQ(
      decode(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always"})", {"▁Hey", "▁friend"}),
      "Hey friend");
  EXPECT_EQ(decode(R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"never"})", {"▁Hey", "▁friend"}),
            " Hey friend");
}

TEST(Decoder, WordPieceAndBpeSuffix) {
  EXPECT_EQ(decode(R"({"type":"WordPiece","prefix":"##","cleanup":true})",
                   {"hello", "##s", ",", "world", "do", "not"}),
            "hellos, world do not");  // the clean-up works within one token
  EXPECT_EQ(decode(R"({"type":"WordPiece","prefix":"##","cleanup":true})", {"i", "do not"}), "i don't");
  EXPECT_EQ(decode(R"({"type":"BPEDecoder","suffix":"</w>"})", {"hel", "lo</w>", "world</w>"}),
            "hello world");
  EXPECT_EQ(clean_up_tokenization("a , b . I 'm c n't"), "a, b. I'm cn't");
  EXPECT_EQ(clean_up_llama_cpp("a , b . I 'm x ' y it 't"), "a, b. I'm x'y it 't");
}

}  // namespace
}  // namespace glass::tokenizer
