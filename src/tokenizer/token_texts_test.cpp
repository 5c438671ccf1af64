// The packed token texts (token_texts.h): order, edits, iteration and the 4 GiB refusal.
#include "tokenizer/token_texts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace glass::tokenizer {
namespace {

TEST(TokenTexts, HoldsTextsInIdOrder) {
  TokenTexts t = {"a", "", "\xE2\x96\x81hello", "b"};
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0], "a");
  EXPECT_EQ(t[1], "");
  EXPECT_EQ(t[2], "\xE2\x96\x81hello");
  EXPECT_EQ(t.back(), "b");
  EXPECT_EQ(t.bytes(), 1u + 0u + 8u + 1u);
  std::vector<std::string> seen;
  for (std::string_view s : t) seen.emplace_back(s);
  EXPECT_EQ(seen, t.to_strings());
  EXPECT_EQ(TokenTexts(seen), t);
}

TEST(TokenTexts, SetRewritesOneTextAndKeepsTheOthers) {
  TokenTexts t = {"one", "two", "three", "four"};
  t.set(1, "a much longer second text");
  t.set(3, "");
  t.set(0, "1");
  EXPECT_EQ(t.to_strings(), (std::vector<std::string>{"1", "a much longer second text", "three", ""}));
  t.set(3, "4");
  EXPECT_EQ(t.back(), "4");
  EXPECT_NE(t, (TokenTexts{"1", "a much longer second text", "three", "x"}));
}

TEST(TokenTexts, AddRefusesTextsPastTheLimitAndAddsNothing) {
  TokenTexts t = {"x"};
  // A view of kMaxBytes bytes is never read: the size check comes first.
  const std::string_view huge(t[0].data(), TokenTexts::kMaxBytes);
  EXPECT_FALSE(t.add(huge));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.bytes(), 1u);
  EXPECT_THROW(t.push_back(huge), std::length_error);
  EXPECT_TRUE(t.add("y"));
  EXPECT_EQ(t[1], "y");
}

}  // namespace
}  // namespace glass::tokenizer
