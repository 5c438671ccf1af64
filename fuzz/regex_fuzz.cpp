// Regular expressions: Constraint::from_regex (the whole output matches) and, through a schema's
// `pattern`, the JSON-string search form (RegexMode::JsonSearch); whatever compiles is matched as
// the gbnf harness does (grammar_driver.h). Input: the pattern, separator, driver bytes
// (fuzz_input.h); without a separator the pattern is its own driver.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "glass/grammar.h"
#include "grammar/regex.h"
#include "grammar_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [pattern, driver] = glass::fuzz::split2(data, size);
  if (driver.empty()) driver = pattern;
  if (auto c = glass::Constraint::from_regex(pattern); c.ok())
    glass::fuzz::exercise_constraint(**c, driver, pattern);
  // The schema form: the pattern inside a JSON string, searched for (unanchored).
  auto expr = glass::grammar::regex_to_gbnf(pattern, glass::grammar::RegexMode::JsonSearch);
  if (!expr.ok()) return 0;
  auto c = glass::Constraint::from_gbnf("root ::= \"\\\"\" " + *expr + " \"\\\"\"\n" +
                                        "jchar ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" "
                                        "[0-9a-fA-F]{4})\n");
  if (c.ok()) glass::fuzz::exercise_constraint(**c, driver, pattern);
  return 0;
}
