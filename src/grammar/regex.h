#pragma once
// A regular-expression subset as a GBNF expression: literals and escapes (\n \t \r \f \v \0 \xHH
// \uHHHH, escaped metacharacters), `.`, classes with ranges and negation, \d \w \s (ASCII: the
// meaning ECMA-262 and Python agree on; \D \W \S as ASCII complements for the same reason),
// groups (capturing, (?:...), (?<name>...), (?P<name>...)), |, * + ? {m} {m,} {m,n} (lazy forms
// match the same strings), and ^ / $ at the ends of a top-level alternative. Anything else —
// lookaround, backreferences, \b, inline flags, anchors elsewhere — is an error naming the
// construct and its offset: a constraint never silently means something else.
#include <string>
#include <string_view>

#include "glass/result.h"

namespace glass::grammar {

enum class RegexMode {
  Full,        // the whole text matches (Constraint::regex): raw bytes
  JsonSearch,  // JSON Schema `pattern`: unanchored search, inside a JSON string (chars escaped)
};

Result<std::string> regex_to_gbnf(std::string_view pattern, RegexMode mode);

// A GBNF string literal for `bytes` (quotes, backslashes and control bytes escaped).
std::string gbnf_literal(std::string_view bytes);

}  // namespace glass::grammar
