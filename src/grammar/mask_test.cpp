// Token masks from the trie walk and position tables equal a brute-force check of every token
// against the full state, along valid texts; accepting tokens advances the state.
#include <gtest/gtest.h>

#include <random>

#include "grammar/bound.h"
#include "grammar/gbnf.h"
#include "grammar/matcher.h"

namespace glass::grammar {
namespace {

// A vocabulary of JSON-ish pieces plus every single byte and some multi-byte UTF-8 pieces (and
// halves of characters), with two end tokens.
std::shared_ptr<TokenIndex> test_vocab() {
  std::vector<std::string> pieces = {
      "",     "",     "{",    "}",    "[",  "]",   "\"",   "\":",   "\",",  "\"}", ",\"",   "{\"",
      "\"]",  ":",    ",",    " ",    "\n", "  ",  "true", "false", "null", "tr",  "ue",    "nu",
      "0",    "1",    "12",   "123",  "-",  ".",   "e",    "E+",    "a",    "ab",  "abc",   "b\"",
      "é",    "\xc3", "\xa9", "日本", "\\", "\\n", "\\u",  "00e9",  "x\"}", "1}",  "\"a\"", "\"a",
      "a\":", "]}",   "}]",   "},",   "1,", "1]",  "{}",   "[]"};
  for (int b = 1; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  // Longer than a table's walk (kWalkDepth): decided against the full state.
  pieces.push_back(std::string(40, 'a'));
  pieces.push_back(std::string(26, 'b') + "\":1,\"k\":");
  pieces.push_back("\"" + std::string(30, 'c') + "\"");
  pieces.push_back(std::string(32, ' '));
  return std::make_shared<TokenIndex>(std::move(pieces), std::vector<int32_t>{0, 1});
}

std::vector<bool> brute_force(const Grammar& g, const TokenIndex& v, std::string_view prefix) {
  Automaton a(g);
  int32_t s = a.start_state(g.start);
  for (const char c : prefix) s = a.next(s, static_cast<uint8_t>(c));
  std::vector<bool> ok(static_cast<size_t>(v.vocab_size()), false);
  for (int32_t id = 0; id < v.vocab_size(); ++id) {
    if (v.is_end(id)) {
      ok[static_cast<size_t>(id)] = a.can_end(s);
      continue;
    }
    const std::string& p = v.piece(id);
    if (p.empty()) continue;
    int32_t t = s;
    for (const char c : p) {
      if ((t = a.next(t, static_cast<uint8_t>(c))) == Automaton::kDead) break;
    }
    ok[static_cast<size_t>(id)] = t != Automaton::kDead;
  }
  return ok;
}

// Walks `text` byte by byte from the start, the matcher's mask equal to the brute force before each
// byte and at the end; the grammar can end there.
void expect_masks_along(const Grammar& g, const std::shared_ptr<BoundGrammar>& bound, const TokenIndex& v,
                        const std::string& text) {
  Matcher m(bound);
  std::vector<uint64_t> mask(v.mask_words());
  for (size_t i = 0; i <= text.size(); ++i) {
    ASSERT_TRUE(m.fill_mask(mask).ok());
    const auto want = brute_force(g, v, text.substr(0, i));
    for (int32_t id = 0; id < v.vocab_size(); ++id) {
      const bool got = (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
      ASSERT_EQ(got, want[static_cast<size_t>(id)])
          << "text '" << text.substr(0, i) << "' token " << id << " '" << v.piece(id) << "'";
    }
    if (i < text.size()) {
      ASSERT_TRUE(m.accept_bytes(text.substr(i, 1))) << text.substr(0, i + 1);
    }
  }
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.accept_token(0));
}

const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [0-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(Mask, EqualsBruteForceAlongValidTexts) {
  auto g = compile_gbnf(kJson);
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto grammar = std::make_shared<Grammar>(std::move(*g));
  auto vocab = test_vocab();
  auto bound = std::make_shared<BoundGrammar>(grammar, vocab);
  const std::string texts[] = {"{\"a\": [1, 2.5e+3, true, {\"b\": null}], \"é日本\": \"x\\n\\u00e9\"}",
                               "{\"" + std::string(50, 'b') + "\":1,\"k\":\"" + std::string(45, 'a') + "\"}",
                               "{}", "{\"k\":{\"k\":{\"k\":[[],[{}]]}}}\n  "};
  for (const std::string& text : texts) expect_masks_along(*grammar, bound, *vocab, text);
}

TEST(Mask, RandomWalksMatchBruteForce) {
  auto g = compile_gbnf(kJson);
  ASSERT_TRUE(g.ok());
  auto grammar = std::make_shared<Grammar>(std::move(*g));
  auto vocab = test_vocab();
  auto bound = std::make_shared<BoundGrammar>(grammar, vocab);
  std::mt19937 rng(7);
  std::vector<uint64_t> mask(vocab->mask_words());
  for (int walk = 0; walk < 20; ++walk) {
    Matcher m(bound);
    std::string text;
    for (int step = 0; step < 40; ++step) {
      ASSERT_TRUE(m.fill_mask(mask).ok());
      const auto want = brute_force(*grammar, *vocab, text);
      std::vector<int32_t> allowed;
      for (int32_t id = 0; id < vocab->vocab_size(); ++id) {
        const bool got = (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
        ASSERT_EQ(got, want[static_cast<size_t>(id)])
            << "after '" << text << "' token '" << vocab->piece(id) << "'";
        if (got && !vocab->is_end(id)) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      const int32_t t = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      ASSERT_TRUE(m.accept_token(t));
      text += vocab->piece(t);
    }
  }
}

// A flat repetition longer than a table's walk: every position more than kWalkDepth bytes before its
// end has the same grammar within the walk's reach, so one table serves them all (their keys' texts
// held the whole rest of the sequence: a fuzzed "[^\n]+ {100000}" spent seconds per byte building
// them), and the masks where the walk reaches the "!" still equal the brute force.
TEST(Mask, LongFlatSequencesShareTablesAndStayExact) {
  auto g = compile_gbnf("root ::= [a-c]{300} \"!\"");
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto grammar = std::make_shared<Grammar>(std::move(*g));
  auto vocab = test_vocab();
  auto bound = std::make_shared<BoundGrammar>(grammar, vocab);
  expect_masks_along(*grammar, bound, *vocab, std::string(300, 'a') + "!");
  // One table for the first ~275 positions, one each for the last ~kWalkDepth + 2.
  EXPECT_LE(vocab->cached_tables(), size_t{kWalkDepth} + 8)
      << vocab->cached_tables() << " tables for 301 positions";
}

TEST(Mask, RejectsWhatTheGrammarRejects) {
  auto g = compile_gbnf("root ::= \"ab\" [0-9]+");
  ASSERT_TRUE(g.ok());
  auto bound = std::make_shared<BoundGrammar>(std::make_shared<Grammar>(std::move(*g)), test_vocab());
  Matcher m(bound);
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_bytes("b"));
  EXPECT_TRUE(m.accept_bytes("a"));
  EXPECT_FALSE(m.accept_token(0));  // an end token before the grammar can end
  EXPECT_TRUE(m.accept_bytes("b1"));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.can_continue());
}

}  // namespace
}  // namespace glass::grammar
