// Regex: the Oniguruma rewrite, match iteration (empty matches), UTF-8 checks, errors; and every
// llama.cpp pre-tokenizer family compiling.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include "tokenizer/pipeline.h"

namespace glass::tokenizer {
namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

Ranges matches(std::string_view pattern, std::string_view text) {
  Result<Regex> re = Regex::compile(pattern);
  EXPECT_TRUE(re.ok()) << (re.ok() ? "" : re.error().message);
  Ranges out;
  if (!re) return out;
  EXPECT_TRUE(re->find_all(text, out).ok());
  return out;
}

TEST(Regex, SpaceIsUnicodeWhiteSpaceAsOniguruma) {
  // U+0085 (NEL) is White_Space but not in PCRE2's UCP \s; U+200B (ZWSP) is neither.
  EXPECT_EQ(matches("\\s+", "a\xC2\x85 b"), (Ranges{{1, 4}}));
  EXPECT_EQ(matches("\\s+", "a\xE2\x80\x8B"), Ranges{});
  EXPECT_EQ(matches("[^\\s\\p{L}]+", "ab \xC2\x85!?"), (Ranges{{5, 7}}));
  EXPECT_EQ(matches("\\S+", "x\xC2\x85y"), (Ranges{{0, 1}, {3, 4}}));
  EXPECT_EQ(
      translate_onig_pattern("[\\s]"),
      "[\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
      "\\x{3000}]");
  // Escapes and \p{...} pass through untouched.
  EXPECT_EQ(translate_onig_pattern("\\\\s\\p{L}"), "\\\\s\\p{L}");
}

TEST(Regex, Gpt2PatternSplitsAsExpected) {
  const std::string_view gpt2 =
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
  EXPECT_EQ(matches(gpt2, "Hello world's  123!"),
            (Ranges{{0, 5}, {5, 11}, {11, 13}, {13, 14}, {14, 18}, {18, 19}}));
}

TEST(Regex, EmptyMatchesAreSplitPoints) {
  // Lookahead-only patterns (llama.cpp's superbpe) match empty strings between digit groups.
  EXPECT_EQ(matches("(?=(\\d{3})+(?!\\d))", "1234567"), (Ranges{{1, 1}, {4, 4}}));
  EXPECT_EQ(matches("x*", "ab"), (Ranges{{0, 0}, {1, 1}, {2, 2}}));
}

TEST(Regex, LiteralAndErrors) {
  Result<Regex> lit = Regex::literal("a.b(");
  ASSERT_TRUE(lit.ok());
  Ranges out;
  ASSERT_TRUE(lit->find_all("xa.b(yaxb(", out).ok());
  EXPECT_EQ(out, (Ranges{{1, 5}}));

  Result<Regex> bad = Regex::compile("(unclosed");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(bad.error().message.find("cannot compile regex '(unclosed'"), std::string::npos)
      << bad.error().message;

  Result<Regex> re = Regex::compile("a");
  ASSERT_TRUE(re.ok());
  Status s = re->find_all("a\xFF", out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("not valid UTF-8"), std::string::npos);
}

TEST(Regex, LongWhitespaceRunsStayFast) {
  // \s+(?!\S) backtracks one character per run; a 1 MB run must not blow a JIT stack.
  const std::string text(1 << 20, ' ');
  EXPECT_EQ(matches("\\s+(?!\\S)|\\s+", text + "x"),
            (Ranges{{0, text.size() - 1}, {text.size() - 1, text.size()}}));
}

TEST(LlamaPre, EveryFamilyCompiles) {
  const auto names = llama_pre_names();
  EXPECT_GT(names.size(), 60u);
  for (const std::string& name : names) {
    Result<LlamaPre> pre = llama_pre(name);
    ASSERT_TRUE(pre.ok()) << name;
    EXPECT_FALSE(pre->regexes.empty()) << name;
    for (const std::string& r : pre->regexes) {
      Result<Regex> re = Regex::compile(r);
      EXPECT_TRUE(re.ok()) << name << ": " << (re.ok() ? "" : re.error().message);
    }
  }
  EXPECT_TRUE(llama_pre("llama-bpe")->ignore_merges);
  EXPECT_TRUE(llama_pre("llama-bpe")->add_bos);
  EXPECT_FALSE(llama_pre("qwen2")->clean_spaces);
  EXPECT_EQ(llama_pre("kimi-k2").error().code, ErrorCode::Unsupported);
  EXPECT_EQ(llama_pre("nonsense").error().code, ErrorCode::Unsupported);
}

}  // namespace
}  // namespace glass::tokenizer
