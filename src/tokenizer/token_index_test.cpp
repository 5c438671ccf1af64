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

// The index reads the vocabulary's texts in place: a token costs at most 22 bytes of slots (8-byte
// slots, at most 3/4 full, rounded up to a power of two: 8 * 4/3 * 2). The node-based map it first replaced
// took ~64 bytes plus the text copied into the node, plus the bucket array; its next form copied every text.
TEST(TokenIndex, CostsOnlyItsSlots) {
  const Vocab v = numbered(1000000);
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  Result<TokenIndex> index = TokenIndex::build(v);
  ASSERT_TRUE(index.ok());
  EXPECT_LE(test::peak_bytes() - before, 22 * v.tokens.size());
  for (int32_t id : {0, 1, 999999}) EXPECT_EQ(index->find(v.tokens[static_cast<size_t>(id)]), id);
  EXPECT_EQ(index->find("not a token"), -1);
}

}  // namespace
}  // namespace glass::tokenizer
