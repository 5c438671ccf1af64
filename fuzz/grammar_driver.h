#pragma once
// What the grammar harnesses (gbnf, json_schema, regex, http_body) do with a Constraint that
// compiled: match byte strings through its automaton, and walk token masks over a small vocabulary
// built for the input, each mask checked against a brute-force test of every token (the mask tables
// and deferred walks must agree with the automaton). `driver` steers both walks: its bytes are the
// strings tried and the choices among allowed tokens, so the fuzzer can reach deep states. Every
// loop is bounded by the driver's length and fixed caps; a disagreement is a crash (__builtin_trap).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/bound.h"
#include "grammar/constraint.h"
#include "grammar/matcher.h"
#include "grammar/token_index.h"
#include "runtime/access.h"

namespace glass::fuzz {

// Pieces of a small vocabulary: two end tokens (empty pieces), a control token, every byte, JSON and
// grammar-ish pieces, halves of UTF-8 characters, pieces past a table's walk depth (grammar/bound.h),
// then up to 16 pieces cut from the driver.
inline std::vector<std::string> grammar_fuzz_pieces(std::string_view driver) {
  std::vector<std::string> p = {"",
                                "",
                                "",
                                "{",
                                "}",
                                "[",
                                "]",
                                "\"",
                                "\":",
                                "\",",
                                "{\"",
                                ":",
                                ",",
                                " ",
                                "\n",
                                "  ",
                                "true",
                                "false",
                                "null",
                                "0",
                                "12",
                                "-",
                                ".",
                                "e+",
                                "a",
                                "ab",
                                "\\",
                                "\\n",
                                "\\u",
                                "00e9",
                                "é",
                                "\xc3",
                                "\xa9",
                                "日本",
                                "\xe6\x97",
                                "<",
                                ">",
                                "<tool_call>",
                                "</tool_call>",
                                "name",
                                "arguments",
                                "\"name\": \""};
  for (int b = 1; b < 256; ++b) p.emplace_back(1, static_cast<char>(b));
  p.emplace_back(30, 'a');
  p.push_back("{\"" + std::string(24, 'k') + "\": 1}");
  p.push_back(std::string(26, ' ') + "\n");
  size_t at = 0;
  for (int i = 0; i < 16 && at < driver.size(); ++i) {
    const size_t len = 1 + static_cast<uint8_t>(driver[at]) % 40;
    p.emplace_back(driver.substr(at, len));
    at += len;
  }
  return p;
}

[[noreturn]] inline void grammar_fuzz_fail() { __builtin_trap(); }

// Whether `s` is in the grammar's language, byte by byte; bounded by s.size() steps.
inline bool grammar_fuzz_matches(grammar::Automaton& a, int32_t start, std::string_view s) {
  int32_t st = start;
  for (const char c : s) {
    st = a.next(st, static_cast<uint8_t>(c));
    if (st == grammar::Automaton::kDead) return false;
  }
  return a.can_end(st);
}

inline void exercise_constraint(const Constraint& constraint, std::string_view driver,
                                std::string_view text) {
  const Constraint::Impl& c = internal::Access::impl(constraint);
  const grammar::Grammar& g = *c.grammar;
  {
    grammar::Automaton a(g);
    const int32_t start = a.start_state(g.start);
    (void)grammar_fuzz_matches(a, start, driver.substr(0, 512));
    (void)grammar_fuzz_matches(a, start, text.substr(0, 512));
    // Halves of the driver, so strings that differ from the grammar text are tried as well.
    (void)grammar_fuzz_matches(a, start, driver.substr(0, driver.size() / 2).substr(0, 512));
    (void)grammar_fuzz_matches(a, start, driver.substr(driver.size() / 2).substr(0, 512));
    // A random walk through the automaton: each driver byte picks one of the bytes the state allows.
    int32_t st = start;
    for (size_t i = 0; i < driver.size() && i < 256; ++i) {
      uint8_t allowed[256];
      size_t n = 0;
      for (int b = 0; b < 256; ++b)
        if (a.next(st, static_cast<uint8_t>(b)) != grammar::Automaton::kDead)
          allowed[n++] = static_cast<uint8_t>(b);
      if (n == 0) break;
      st = a.next(st, allowed[static_cast<uint8_t>(driver[i]) % n]);
    }
  }

  // Token masks along a walk the driver chooses, each checked against every token by brute force.
  auto vocab =
      std::make_shared<const grammar::TokenIndex>(grammar_fuzz_pieces(driver), std::vector<int32_t>{0, 1});
  auto bound = c.bind(vocab);
  grammar::Matcher m(bound);
  grammar::Automaton oracle(g);
  int32_t ost = oracle.start_state(g.start);
  std::vector<uint64_t> mask(vocab->mask_words());
  for (size_t step = 0; step < 48; ++step) {
    if (!m.fill_mask(mask).ok()) return;  // too ambiguous here: an error, not a mask
    if (oracle.overflowed()) return;
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < vocab->vocab_size(); ++id) {
      bool want = false;
      if (vocab->is_end(id)) {
        want = oracle.can_end(ost);
      } else if (const std::string& piece = vocab->piece(id); !piece.empty()) {
        int32_t t = ost;
        for (const char ch : piece)
          if ((t = oracle.next(t, static_cast<uint8_t>(ch))) == grammar::Automaton::kDead) break;
        want = t != grammar::Automaton::kDead;
      }
      if (oracle.overflowed()) return;
      const bool got = (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
      if (got != want) grammar_fuzz_fail();
      if (got) allowed.push_back(id);
    }
    if (allowed.empty()) return;
    const uint8_t choice =
        step < driver.size() ? static_cast<uint8_t>(driver[step]) : static_cast<uint8_t>(step);
    const int32_t id = allowed[choice % allowed.size()];
    if (!m.accept_token(id)) {
      if (m.overflowed()) return;  // too ambiguous on the way: the same error as a mask's
      grammar_fuzz_fail();         // the mask allowed it
    }
    if (vocab->is_end(id)) return;
    for (const char ch : vocab->piece(id)) ost = oracle.next(ost, static_cast<uint8_t>(ch));
  }
}

}  // namespace glass::fuzz
