// GBNF parsing, lowering and matching whole strings (no vocabulary): accepted, rejected, errors.
#include "grammar/gbnf.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "grammar/analysis.h"
#include "grammar/automaton.h"
#include "grammar/matches_test_support.h"

namespace glass::grammar {
namespace {

using support::matches;

Grammar compile(std::string_view text) {
  auto g = compile_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::move(*g) : Grammar{};
}

TEST(Gbnf, LiteralsAlternativesAndGroups) {
  const Grammar g = compile(R"(root ::= "a" ("b" | "cd")+ "e"?  # comment
)");
  EXPECT_TRUE(matches(g, "ab"));
  EXPECT_TRUE(matches(g, "acdbe"));
  EXPECT_FALSE(matches(g, "a"));
  EXPECT_FALSE(matches(g, "abee"));
  EXPECT_FALSE(matches(g, "ac"));
}

TEST(Gbnf, CountedRepetitions) {
  const Grammar g = compile(R"(root ::= [0-9]{2,4} "-" "x"{3} "-" "y"{1,} "-" "z"{0,2})");
  EXPECT_TRUE(matches(g, "12-xxx-y-"));
  EXPECT_TRUE(matches(g, "1234-xxx-yyyy-zz"));
  EXPECT_FALSE(matches(g, "1-xxx-y-"));
  EXPECT_FALSE(matches(g, "12345-xxx-y-"));
  EXPECT_FALSE(matches(g, "12-xx-y-"));
  EXPECT_FALSE(matches(g, "12-xxx--"));
  EXPECT_FALSE(matches(g, "12-xxx-y-zzz"));
}

TEST(Gbnf, ClassesNegationAnyAndUtf8) {
  const Grammar g = compile(R"(root ::= [^"\\]* "|" . [α-ω] [\u3040-\u309F\x41])");
  EXPECT_TRUE(matches(g, "hé llo|xβぁ"));
  EXPECT_TRUE(matches(g, "|€γA"));
  EXPECT_FALSE(matches(g, "a\"b|xβA"));
  EXPECT_FALSE(matches(g, "|xaA"));    // 'a' is not in [α-ω]
  EXPECT_FALSE(matches(g, "|x\xce"));  // half a character cannot end
  EXPECT_FALSE(matches(g,
                       "|\xff\xce\xb2"
                       "A"));  // not UTF-8
}

TEST(Gbnf, EscapesInLiterals) {
  const Grammar g = compile(R"(root ::= "\"\\\n\t\x41\u00e9" [\]\[\-])");
  EXPECT_TRUE(matches(g, "\"\\\n\tAé]"));
  EXPECT_TRUE(matches(g, "\"\\\n\tAé-"));
  EXPECT_FALSE(matches(g, "\"\\\n\tAéx"));
}

TEST(Gbnf, MultiLineRules) {
  const Grammar g = compile("root ::= item (\n  \",\" item\n)*\n\nitem ::= \"a\"\n  | \"b\"\n");
  EXPECT_TRUE(matches(g, "a,b,a"));
  EXPECT_FALSE(matches(g, "a,"));
}

struct BadCase {
  const char* text;
  const char* message;  // a substring of the error
};

TEST(Gbnf, ErrorsNameLineAndColumn) {
  const BadCase cases[] = {
      {"root ::= \"a\" foo", "line 1, column 14: undefined rule 'foo'"},
      {"root ::= \"a", "unterminated string literal"},
      {"root ::= [a-", "unterminated character class"},
      {"root ::= (\"a\"", "expected ')'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: rule 'root' is defined twice"},
      {"start ::= \"a\"", "no rule 'root'"},
      {"root ::= \"a\"{3,1}", "max below min"},
      {"root ::= * \"a\"", "nothing before it to repeat"},
      {"root ::= \"\\q\"", "line 1, column 11: unknown escape"},
      {"root ::= [z-a]", "out of order"},
      {"root ::= \"a\"{0,1000000}", "repetition count over"},
      {"root ::= \"a\" )", "unexpected ')'"},
      {"root ::= \n", ""},  // empty body: valid (matches "")
  };
  for (const BadCase& c : cases) {
    auto g = compile_gbnf(c.text);
    if (std::string(c.message).empty()) {
      EXPECT_TRUE(g.ok()) << c.text;
      continue;
    }
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_NE(g.error().message.find(c.message), std::string::npos) << c.text << ": " << g.error().message;
  }
}

TEST(Gbnf, LeftRecursionIsAnError) {
  for (const char* text :
       {"root ::= root \"a\" | \"b\"", "root ::= expr\nexpr ::= term | expr \"+\" term\nterm ::= [0-9]",
        "root ::= x? root \"a\" | \"b\"\nx ::= \"x\"", "root ::= a\na ::= b \"x\"\nb ::= a | \"y\""}) {
    auto g = compile_gbnf(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.error().message.find("left-recursive"), std::string::npos) << g.error().message;
  }
  // Right recursion and nullable tail loops are fine.
  const Grammar g = compile("root ::= \"a\" root | \"\"\n");
  EXPECT_TRUE(matches(g, "aaaa"));
  const Grammar h = compile("root ::= (\"a\"?)* \"b\"\n");
  EXPECT_TRUE(matches(h, "aab"));
  EXPECT_TRUE(matches(h, "b"));
}

TEST(Gbnf, PathologicalGrammarsStayBounded) {
  // A huge counted repetition: linear size, and matching 10000 items never deepens a stack.
  const Grammar big = compile("root ::= \"x\"{0,10000}");
  EXPECT_TRUE(matches(big, std::string(10000, 'x')));
  EXPECT_FALSE(matches(big, std::string(10001, 'x')));
  // Repetition of a repetition: bounded by kMaxElems, else an error.
  auto huge = compile_gbnf("root ::= (\"x\"{0,100000} \"y\"{0,100000}){0,100000}");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("elements"), std::string::npos) << huge.error().message;
  // x? x? x? ... : many stacks at once, but finitely many.
  std::string opt = "root ::=";
  for (int i = 0; i < 200; ++i) opt += " \"x\"?";
  const Grammar o = compile(opt);
  EXPECT_TRUE(matches(o, std::string(200, 'x')));
  EXPECT_FALSE(matches(o, std::string(201, 'x')));
  // Deeply nested optional repeats.
  std::string nested = "root ::= ";
  for (int i = 0; i < 100; ++i) nested += "(";
  nested += "\"a\"";
  for (int i = 0; i < 100; ++i) nested += ")*";
  const Grammar n = compile(nested);
  EXPECT_TRUE(matches(n, "aaaa"));
  EXPECT_FALSE(matches(n, "ab"));
  // Nesting beyond the parser's bound is an error, not a stack overflow.
  std::string deep = "root ::= " + std::string(100000, '(') + "\"a\"" + std::string(100000, ')');
  auto d = compile_gbnf(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("nested deeper"), std::string::npos);
}

// (x{a,b}){c,d} is the set of run lengths that sum c..d counts of a..b each, whether or not the lowering
// folds it into one repetition: checked for every small a, b, c, d (and * / +) against that sum set.
TEST(Gbnf, NestedRepetitionsMatchTheirSums) {
  constexpr int kLongest = 12;
  constexpr int kInf = -1;
  const std::vector<std::pair<int, int>> counts = {{0, 0}, {0, 1}, {0, 2},    {1, 1},    {1, 3},
                                                   {2, 2}, {2, 3}, {0, kInf}, {1, kInf}, {2, kInf}};
  auto suffix = [](std::pair<int, int> r) {
    return r.second == kInf ? fmt::format("{{{},}}", r.first) : fmt::format("{{{},{}}}", r.first, r.second);
  };
  for (const auto& inner : counts) {
    for (const auto& outer : counts) {
      std::vector<bool> sums(kLongest + 1, false);  // the lengths j outer iterations reach
      std::vector<bool> reach(kLongest + 1, false);
      reach[0] = true;
      const int most = outer.second == kInf ? kLongest + outer.first + 1 : outer.second;
      for (int j = 0; j <= most; ++j) {
        if (j >= outer.first)
          for (int k = 0; k <= kLongest; ++k) sums[k] = sums[k] || reach[k];
        std::vector<bool> next(kLongest + 1, false);
        for (int k = 0; k <= kLongest; ++k) {
          if (!reach[k]) continue;
          const int hi = inner.second == kInf ? kLongest : inner.second;
          for (int n = inner.first; n <= hi && k + n <= kLongest; ++n) next[k + n] = true;
        }
        reach = next;
      }
      const std::string rule = fmt::format("root ::= (\"x\"{}){} \"!\"", suffix(inner), suffix(outer));
      const Grammar g = compile(rule);
      for (int k = 0; k <= kLongest; ++k)
        EXPECT_EQ(matches(g, std::string(static_cast<size_t>(k), 'x') + "!"), sums[k])
            << rule << " on " << k << " x";
    }
  }
}

// A repetition of a nullable repetition is one repetition: one x extends one stack, not every way
// of splitting the run between the outer iterations (a fuzzed grammar of this shape took 19 s), also
// where the inner repetition is a rule's whole body.
TEST(Gbnf, RepeatedNullableRepetitionsStayUnambiguous) {
  for (const char* rule :
       {"root ::= [a-z ]{0,5001}+ \"!\"", "root ::= ((\"x\"?)+)* \"!\"", "root ::= \"x\"+?+++++++++ \"!\"",
        "root ::= ws{0,100000} \"!\"\nws ::= [x]*", "root ::= w{3,7} \"!\"\nw ::= v\nv ::= (\"x\"+)"}) {
    const Grammar g = compile(rule);
    EXPECT_LT(g.elems.size(), 40u) << rule;  // the rules as written, and one repetition
    Automaton a(g);
    (void)a.start_state(g.start);
    EXPECT_FALSE(a.overflowed()) << rule;
    const bool plus = std::string_view(rule).find("w{3,7}") != std::string_view::npos;  // (x+){3,7} = x{3,}
    const std::string run = std::string(6000, rule[9] == '[' ? 'q' : 'x') + "!";
    EXPECT_TRUE(matches(g, run)) << rule;
    EXPECT_EQ(matches(g, "!"), !plus) << rule;
    EXPECT_EQ(matches(g, "xx!"), !plus) << rule;
    EXPECT_TRUE(matches(g, "xxx!")) << rule;
    EXPECT_FALSE(matches(g, "!!")) << rule;
  }
}

// A rule whose body repeats itself ends the search for what a repetition repeats: an error (left
// recursion), not a loop.
TEST(Gbnf, RepetitionsOfSelfNamingRulesEndTheSearch) {
  for (const char* text : {"root ::= r{0,5}\nr ::= r*", "root ::= a+\na ::= b*\nb ::= a?"}) {
    auto g = compile_gbnf(text);
    ASSERT_FALSE(g.ok()) << text;
    EXPECT_NE(g.error().message.find("left-recursive"), std::string::npos) << g.error().message;
  }
}

TEST(Gbnf, AmbiguityBeyondTheStackBoundIsReported) {
  // Every x can end any of 5000 optional runs: more live stacks than kMaxStacks.
  std::string opt = "root ::=";
  for (int i = 0; i < 5000; ++i) opt += " \"x\"?";
  const Grammar g = compile(opt);
  Automaton a(g);
  (void)a.start_state(g.start);
  EXPECT_TRUE(a.overflowed());
}

TEST(Gbnf, StacksThroughEmptyMatchesAreBounded) {
  // r_i ::= r_{i+1} r_{i+1}: 2^30 distinct stacks through empty matches before the first byte, none of
  // them a live top (the gbnf fuzz harness's hostile seeds). The closure stops at kMaxClosure nodes
  // and reports the overflow instead of growing for minutes and gigabytes.
  std::string chain = "root ::= r1 r1 \"x\"\n";
  for (int i = 1; i < 30; ++i)
    chain += std::string("r") + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " r" +
             std::to_string(i + 1) + "\n";
  chain += "r30 ::= \"\"\n";
  const Grammar g = compile(chain);
  Automaton a(g);
  (void)a.start_state(g.start);
  EXPECT_TRUE(a.overflowed());
  EXPECT_LE(a.n_nodes(), kMaxClosure * 4);
  // Ten levels (1024 stacks) are matched as usual.
  std::string small = "root ::= r1 r1 \"x\"\n";
  for (int i = 1; i < 10; ++i)
    small += std::string("r") + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " r" +
             std::to_string(i + 1) + "\n";
  small += "r10 ::= \"\" | \"a\"\n";
  const Grammar h = compile(small);
  EXPECT_TRUE(matches(h, "x"));
  EXPECT_TRUE(matches(h, "aaax"));
  EXPECT_FALSE(matches(h, "ax" + std::string(1, 'a')));
}

// x{0,100000} lowers to 100000 nested optional rules. Nullability, FIRST and FOLLOW were fixpoints of
// whole passes over the grammar, one pass per link of such a chain: binding "[a-z]{0,100000}" to a
// vocabulary took minutes (the gbnf fuzz harness's seed [a-z]{0,5000} timed out). Worklists make it
// linear; the sets are what they were.
TEST(Gbnf, LongRepetitionChainsAreAnalysedInOnePass) {
  const Grammar g = compile("root ::= [a-z]{0,100000} \"!\"\n");
  const FirstFollow ff = first_follow(g);
  size_t helpers = 0, wrong = 0;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (!g.rules[r].helper) continue;
    ++helpers;
    const bool ok = ff.nullable[r] && ff.first[r].has('a') && ff.first[r].has('z') && !ff.first[r].has('!') &&
                    ff.follow[r].has('!') && !ff.follow[r].has('a');
    wrong += ok ? 0 : 1;
  }
  EXPECT_GE(helpers, 1000u);
  EXPECT_EQ(wrong, 0u);
  const uint32_t root = g.root;
  EXPECT_FALSE(ff.nullable[root]);
  EXPECT_TRUE(ff.first[root].has('a') && ff.first[root].has('!'));
  EXPECT_TRUE(ff.follow[root].empty());
  EXPECT_TRUE(matches(g, std::string(1000, 'q') + "!"));
  EXPECT_TRUE(matches(g, "!"));
  EXPECT_FALSE(matches(g, "q!q"));
  // 100000 nullable calls side by side in one alternative (the fuzz harness's timeout
  // " "*{100000}): FOLLOW of each call is the FIRST of everything after it up to the first
  // non-nullable element, found in one backward scan instead of one scan per call.
  const Grammar side = compile("root ::= s t{100000} \"!\"\ns ::= \"a\"?\nt ::= \" \"* | \"b\"\n");
  const FirstFollow sf = first_follow(side);
  for (size_t r = 0; r < side.rules.size(); ++r) {
    const std::string& name = side.rules[r].name;
    if (name != "s" && name != "t") continue;
    EXPECT_TRUE(sf.follow[r].has(' ') && sf.follow[r].has('b') && sf.follow[r].has('!')) << name;
    EXPECT_EQ(sf.follow[r].has('a'), false) << name;
  }
  // (Matching it is another matter: after a space, any of the 100000 calls may be the one that
  // matched it, past the matcher's bound on live stacks; it fails closed.)
  EXPECT_FALSE(matches(side, "aa!"));
  // Nullability through chains of calls: r1 ::= r2 r2, ..., r40 ::= "" | "a".
  std::string chain = "root ::= r1 \"x\"\n";
  for (int i = 1; i < 40; ++i)
    chain += std::string("r") + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " r" +
             std::to_string(i + 1) + "\n";
  chain += "r40 ::= \"\" | \"a\"\n";
  auto c = compile_gbnf(chain);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const std::vector<bool> nullable = nullable_rules(*c);
  for (size_t r = 0; r < c->rules.size(); ++r)
    EXPECT_EQ(nullable[r], c->rules[r].name != "root") << c->rules[r].name;
}

}  // namespace
}  // namespace glass::grammar
