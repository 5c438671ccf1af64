#pragma once
// Parsed rules -> the byte grammar (ir.h). Groups and alternatives inside a sequence become helper
// rules; x* is `h ::= x h |` (the call in tail position, so matching it never deepens a stack);
// x{m,n} is m copies then n - m nested optionals; character classes become UTF-8 byte sequences.
// Then the checks: every referenced rule defined (errors name the reference's line and column),
// no rule defined twice, the root present, and no left recursion (grammar/analysis.h).
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "grammar/ast.h"
#include "grammar/ir.h"

namespace glass::grammar {

Result<Grammar> lower(const std::vector<RuleDef>& rules, std::string_view root);

}  // namespace glass::grammar
