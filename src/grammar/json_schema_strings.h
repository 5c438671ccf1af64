#pragma once
// JSON Schema strings beyond the primitives: `pattern` together with minLength / maxLength, and
// the grammar of a string's content tested against a text (patternProperties, propertyNames).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "glass/result.h"

namespace glass::grammar {

// The code-point lengths of the strings a pattern's content grammar (regex_to_gbnf in JsonSearch
// mode, with `jchar_rule` the body of its jchar rule) accepts: [min, max], max nullopt when
// unbounded. Counted over the JSON-encoded text as a validator counts the decoded string (an
// escape is one code point, a surrogate pair one; a lone high surrogate is counted as both 0 and 1
// so either bound stays sound). Errors when the pattern's automaton is too large to walk.
struct LengthRange {
  uint64_t min = 0;
  std::optional<uint64_t> max;
};
Result<LengthRange> pattern_length_range(const std::string& content_gbnf, const std::string& jchar_rule);

// A GBNF expression for the content of the strings matching `pattern` (a search, as JSON Schema
// reads it) whose length lies in [min_len, max_len] (max_len nullopt: unbounded), or an error
// naming what cannot be represented. Exact when the pattern's own lengths lie within the bounds;
// otherwise a pattern that is one repeated single-character atom, anchored or not, is narrowed to
// its anchored form with the repetition count intersected with the bounds (a subset: every string
// it accepts matches the pattern and the bounds).
Result<std::string> pattern_with_length(const std::string& pattern, uint64_t min_len,
                                        std::optional<uint64_t> max_len, const std::string& jchar_rule);

// For each text, whether it (whole) is in the language of the grammar `gbnf` (rule root); the
// grammar is compiled once.
Result<std::vector<bool>> gbnf_accepts(const std::string& gbnf, const std::vector<std::string>& texts);

}  // namespace glass::grammar
