// The schema corpus (tests/grammar/schema_corpus.jsonl, made and checked against python3-jsonschema
// by scripts/gen_schema_corpus.py): every schema compiles, glass accepts every valid instance and
// rejects every invalid one, byte by byte and token by token (the masks of a test vocabulary).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "grammar/automaton.h"
#include "grammar/bound.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "support/fixtures.h"

namespace glass::grammar {
namespace {

struct Entry {
  std::string name, schema;
  std::vector<std::string> valid, invalid;
};

std::vector<Entry> load_corpus() {
  std::ifstream f(test::source_dir() / "tests/grammar/schema_corpus.jsonl");
  std::vector<Entry> out;
  std::string line;
  while (std::getline(f, line)) {
    const auto j = nlohmann::ordered_json::parse(line);  // ordered: members keep the schema order
    out.push_back({j["name"], j["schema"].dump(), j["valid"], j["invalid"]});
  }
  return out;
}

// Where the text stops matching: its length when it matches fully and the grammar can end there.
size_t match_length(const Grammar& g, std::string_view s, bool* complete) {
  Automaton a(g);
  int32_t st = a.start_state(g.start);
  for (size_t i = 0; i < s.size(); ++i) {
    st = a.next(st, static_cast<uint8_t>(s[i]));
    if (st == Automaton::kDead) {
      *complete = false;
      return i;
    }
  }
  *complete = a.can_end(st);
  return s.size();
}

// Pieces: every byte plus the JSON-ish multi-byte pieces a BPE vocabulary has, tokenized by longest match.
std::shared_ptr<TokenIndex> corpus_vocab() {
  std::vector<std::string> pieces = {"<eos>"};
  for (int b = 1; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char* p : {"{\"",   "\":",     "\",\"", "\"}",  "\":\"", "\",",  "},{",    "}]",    "]}",
                        "[{",    "true",    "false", "null", "id",    "name", "status", "alpha", "beta",
                        " blue", "green",   "00",    "12",   "2024",  "-0",   ":\"",    "\\n",   "é",
                        "日本",  "example", ".com",  "@",    "line",  "kind", "pending"})
    pieces.push_back(p);
  pieces[0] = "";  // the end token spells nothing
  return std::make_shared<TokenIndex>(std::move(pieces), std::vector<int32_t>{0});
}

std::vector<int32_t> longest_match(const TokenIndex& v, std::string_view s) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i < s.size()) {
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t id = 1; id < v.vocab_size(); ++id) {
      const std::string& p = v.piece(id);
      if (p.size() > best_len && s.substr(i, p.size()) == p) {
        best = id;
        best_len = p.size();
      }
    }
    out.push_back(best);
    i += best_len;
  }
  return out;
}

TEST(SchemaCorpus, ValidAcceptedInvalidRejected) {
  const auto corpus = load_corpus();
  ASSERT_GE(corpus.size(), 200u) << "run scripts/gen_schema_corpus.py";
  size_t n_valid = 0, n_invalid = 0;
  for (const Entry& e : corpus) {
    auto text = json_schema_to_gbnf(e.schema);
    ASSERT_TRUE(text.ok()) << e.name << ": " << text.error().message;
    auto g = compile_gbnf(*text);
    ASSERT_TRUE(g.ok()) << e.name << ": " << g.error().message << "\n" << *text;
    for (const std::string& v : e.valid) {
      bool complete = false;
      const size_t n = match_length(*g, v, &complete);
      EXPECT_TRUE(complete && n == v.size())
          << e.name << ": valid instance rejected at byte " << n << ": " << v << "\n"
          << *text;
      ++n_valid;
    }
    ASSERT_FALSE(e.invalid.empty()) << e.name;
    for (const std::string& v : e.invalid) {
      bool complete = false;
      const size_t n = match_length(*g, v, &complete);
      EXPECT_FALSE(complete && n == v.size()) << e.name << ": invalid instance accepted: " << v << "\n"
                                              << *text;
      ++n_invalid;
    }
  }
  EXPECT_GE(n_valid, 400u);
  EXPECT_GE(n_invalid, 1000u);
}

// Token by token through the masks: a valid text's every token is in the mask and the end token
// is allowed at its end; an invalid text hits a token outside the mask or cannot end.
TEST(SchemaCorpus, TokenMasksFollowTheOracle) {
  const auto corpus = load_corpus();
  auto vocab = corpus_vocab();
  std::vector<uint64_t> mask(vocab->mask_words());
  auto allowed = [&](int32_t id) -> bool { return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; };
  for (size_t k = 0; k < corpus.size(); k += 3) {  // a third of the corpus keeps the test quick
    const Entry& e = corpus[k];
    auto text = json_schema_to_gbnf(e.schema);
    ASSERT_TRUE(text.ok());
    auto g = compile_gbnf(*text);
    ASSERT_TRUE(g.ok());
    auto bound = std::make_shared<BoundGrammar>(std::make_shared<Grammar>(std::move(*g)), vocab);
    auto run = [&](const std::string& s) {
      Matcher m(bound);
      for (const int32_t id : longest_match(*vocab, s)) {
        if (!m.fill_mask(mask).ok()) return false;
        if (!allowed(id)) return false;
        if (!m.accept_token(id)) {
          ADD_FAILURE() << e.name << ": a masked-in token was rejected";
          return false;
        }
      }
      if (!m.fill_mask(mask).ok()) return false;
      return static_cast<bool>(allowed(0));
    };
    for (const std::string& v : e.valid) EXPECT_TRUE(run(v)) << e.name << ": " << v;
    for (const std::string& v : e.invalid) EXPECT_FALSE(run(v)) << e.name << ": " << v;
  }
}

}  // namespace
}  // namespace glass::grammar
