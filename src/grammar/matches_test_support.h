#pragma once
// For the grammar tests: whether a whole string is in a grammar's language, byte by byte through
// its automaton (no vocabulary).
#include <string_view>

#include "grammar/automaton.h"

namespace glass::grammar::support {

inline bool matches(const Grammar& g, std::string_view s) {
  Automaton a(g);
  int32_t st = a.start_state(g.start);
  for (const char c : s) {
    st = a.next(st, static_cast<uint8_t>(c));
    if (st == Automaton::kDead) return false;
  }
  return a.can_end(st);
}

}  // namespace glass::grammar::support
