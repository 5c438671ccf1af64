// Pre-tokenizers from tokenizer.json snippets, against HF tokenizers' behaviour (the examples of its
// pre_tokenizers unit tests and NormalizedString::split).
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/hf_json.h"

namespace glass::tokenizer {
namespace {

using Words = std::vector<std::string>;

Words split(const std::string& json, const std::string& text, bool at_text_start = true) {
  Result<PreTokenizer> p = hf::parse_pre_tokenizer(hf::Json::parse(json));
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  if (!p) return {};
  std::vector<Word> words{{text, at_text_start}};
  EXPECT_TRUE(p->apply(words).ok());
  Words out;
  for (const Word& w : words) out.push_back(w.text);
  return out;
}

std::string split_json(const char* behavior) {
  return std::string(R"({"type":"Split","pattern":{"String":"-"},"invert":false,"behavior":")") + behavior +
         "\"}";
}

TEST(PreTokenizer, SplitBehaviors) {
  const std::string s = "The-final--countdown";
  EXPECT_EQ(split(split_json("Removed"), s), (Words{"The", "final", "countdown"}));
  EXPECT_EQ(split(split_json("Isolated"), s), (Words{"The", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(split(split_json("MergedWithPrevious"), s), (Words{"The-", "final-", "-", "countdown"}));
  EXPECT_EQ(split(split_json("MergedWithNext"), s), (Words{"The", "-final", "-", "-countdown"}));
  EXPECT_EQ(split(split_json("Contiguous"), s), (Words{"The", "-", "final", "--", "countdown"}));
  // invert: the pattern marks what is kept.
  EXPECT_EQ(
      split(R"({"type":"Split","pattern":{"Regex":"\\w+"},"behavior":"Removed","invert":true})", "Hi, you!"),
      (Words{"Hi", "you"}));
}

TEST(PreTokenizer, ByteLevel) {
  EXPECT_EQ(split(R"({"type":"ByteLevel","add_prefix_space":true,"use_regex":true})",
                  "Hello my friend, how is your day going?"),
            (Words{"ĠHello", "Ġmy", "Ġfriend", ",", "Ġhow", "Ġis", "Ġyour", "Ġday", "Ġgoing", "?"}));
  EXPECT_EQ(split(R"({"type":"ByteLevel","add_prefix_space":false,"use_regex":false})", "a b\n\xC3\xA9"),
            (Words{"aĠbĊÃ©"}));
}

TEST(PreTokenizer, Metaspace) {
  const char* always = R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true})";
  EXPECT_EQ(split(always, "Hey   friend!"), (Words{"▁Hey", "▁", "▁", "▁friend!"}));
  const char* first = R"({"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false})";
  EXPECT_EQ(split(first, "Hey friend", true), (Words{"▁Hey▁friend"}));
  EXPECT_EQ(split(first, "Hey friend", false), (Words{"Hey▁friend"}));  // not at the start of the text
}

TEST(PreTokenizer, WhitespaceDigitsPunctuationBert) {
  EXPECT_EQ(split(R"({"type":"Whitespace"})", "Hey man!! How's it going?"),
            (Words{"Hey", "man", "!!", "How", "'", "s", "it", "going", "?"}));
  EXPECT_EQ(split(R"({"type":"WhitespaceSplit"})", "Hey man!!\u3000x"), (Words{"Hey", "man!!", "x"}));
  EXPECT_EQ(split(R"({"type":"Digits","individual_digits":true})", "Hey 123 friend!"),
            (Words{"Hey ", "1", "2", "3", " friend!"}));
  EXPECT_EQ(split(R"({"type":"Digits","individual_digits":false})", "Hey 123 friend!"),
            (Words{"Hey ", "123", " friend!"}));
  EXPECT_EQ(split(R"({"type":"Punctuation","behavior":"Isolated"})", "Hey friend!     How are you?!?"),
            (Words{"Hey friend", "!", "     How are you", "?", "!", "?"}));
  EXPECT_EQ(split(R"({"type":"BertPreTokenizer"})", "Hey friend!     How are you?!?"),
            (Words{"Hey", "friend", "!", "How", "are", "you", "?", "!", "?"}));
  EXPECT_EQ(split(R"({"type":"CharDelimiterSplit","delimiter":"x"})", "axbxxc"), (Words{"a", "b", "c"}));
}

TEST(PreTokenizer, SequenceAsLlama3) {
  const char* llama3 = R"({"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
      "behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,
      "use_regex":false}]})";
  EXPECT_EQ(split(llama3, "I'M 1234567 ok\n\n  x"),
            (Words{"I", "'M", "Ġ", "123", "456", "7", "Ġok", "ĊĊ", "Ġ", "Ġx"}));
}

TEST(PreTokenizer, UnsupportedAndMalformed) {
  Result<PreTokenizer> u = hf::parse_pre_tokenizer(hf::Json::parse(R"({"type":"UnicodeScripts"})"));
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().code, ErrorCode::Unsupported);
  Result<PreTokenizer> b = hf::parse_pre_tokenizer(
      hf::Json::parse(R"({"type":"Split","pattern":{"Regex":"("},"behavior":"Isolated"})"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::InvalidFile);
  EXPECT_NE(b.error().message.find("pre_tokenizer: tokenizer: cannot compile regex"), std::string::npos)
      << b.error().message;
  Result<PreTokenizer> w = hf::parse_pre_tokenizer(
      hf::Json::parse(R"({"type":"Split","pattern":{"String":"x"},"behavior":"Sideways"})"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("unknown split behavior 'Sideways'"), std::string::npos);
}

}  // namespace
}  // namespace glass::tokenizer
