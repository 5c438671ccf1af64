#pragma once
// llama.cpp's GBNF: `name ::= alternatives`, `|`, groups, `* + ? {m} {m,} {m,n}`, string literals
// and character classes with escapes (\n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH), negated
// classes `[^...]`, `.` (any character), `#` comments. A rule ends at the end of its line unless a
// group is open or the next line starts with `|`. Errors name the line and column.
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "grammar/ast.h"
#include "grammar/ir.h"

namespace glass::grammar {

Result<std::vector<RuleDef>> parse_gbnf(std::string_view text);

// Parses and lowers (lower.h) with `root` as the start rule.
Result<Grammar> compile_gbnf(std::string_view text, std::string_view root = "root");

}  // namespace glass::grammar
