// GBNF grammars (Constraint::from_gbnf: parse, lower, checks) and, when one compiles, matching
// through its automaton and token masks over a small vocabulary (grammar_driver.h). Input: the
// grammar, separator, driver bytes (the strings tried and the walk's choices; fuzz_input.h). Without
// a separator the grammar text is its own driver.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "glass/grammar.h"
#include "grammar_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [text, driver] = glass::fuzz::split2(data, size);
  if (driver.empty()) driver = text;
  auto c = glass::Constraint::from_gbnf(text);
  if (!c.ok()) return 0;
  glass::fuzz::exercise_constraint(**c, driver, text);
  return 0;
}
