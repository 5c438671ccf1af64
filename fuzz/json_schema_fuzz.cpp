// JSON Schemas (Constraint::from_json_schema: the schema converter, then the GBNF it writes
// compiled) and, when one compiles, matching as the gbnf harness does (grammar_driver.h). Input: the
// schema, separator, driver bytes (fuzz_input.h); without a separator the schema is its own driver,
// so a schema's matcher is asked about the schema's text.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "glass/grammar.h"
#include "grammar_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [text, driver] = glass::fuzz::split2(data, size);
  if (driver.empty()) driver = text;
  auto c = glass::Constraint::from_json_schema(text);
  if (!c.ok()) return 0;
  glass::fuzz::exercise_constraint(**c, driver, text);
  return 0;
}
