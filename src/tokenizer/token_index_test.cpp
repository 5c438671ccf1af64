// The token text -> id index (token_index.h): look-ups, the duplicate and empty-text errors, and
// what it costs per token, counted by the test binary's operator new (support/counting_new.h).
#include "tokenizer/token_index.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "support/counting_new.h"

namespace glass::tokenizer {
namespace {

Vocab numbered(size_t n) {
  Vocab v;
  v.tokens.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string t(1, 't');  // not "t" + to_string(i): GCC 12 warns of a memcpy overlap there (-Wrestrict)
    t += std::to_string(i);
    v.tokens.push_back(std::move(t));
  }
  return v;
}

TEST(TokenIndex, FindsEveryTokenAndNothingElse) {
  const Vocab v = numbered(100000);
  Result<TokenIndex> index = TokenIndex::build(v);
  ASSERT_TRUE(index.ok()) << index.error().message;
  for (size_t i = 0; i < v.tokens.size(); ++i) ASSERT_EQ(index->find(v.tokens[i]), static_cast<int32_t>(i));
  for (const char* absent : {"", "t", "t100000", "t-1", "x0", "t00"})
    EXPECT_EQ(index->find(absent), -1) << absent;
}

TEST(TokenIndex, DuplicateAndEmptyTextsAreErrorsNamingTheIds) {
  Vocab v = numbered(10);
  v.tokens.set(7, "t2");
  Result<TokenIndex> dup = TokenIndex::build(v);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("tokens 2 and 7 have the same text 't2'"), std::string::npos)
      << dup.error().message;
  v.tokens.set(7, "");
  Result<TokenIndex> empty = TokenIndex::build(v);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("token 7 has empty text"), std::string::npos) << empty.error().message;
}

// A token costs its bytes plus the offset and two table slots (at most half full, rounded up to a
// power of two): under 48 bytes beyond its text. The node-based map it replaced took ~64 bytes plus
// the text copied into the node, plus the bucket array.
TEST(TokenIndex, CostsLittleBeyondTheTexts) {
  const Vocab v = numbered(1000000);
  size_t text = 0;
  for (std::string_view t : v.tokens) text += t.size();
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  Result<TokenIndex> index = TokenIndex::build(v);
  ASSERT_TRUE(index.ok());
  EXPECT_LE(test::peak_bytes() - before, text + 48 * v.tokens.size());
}

}  // namespace
}  // namespace glass::tokenizer
