#pragma once
// Tokens -> statements and expressions, following Jinja2's grammar and operator precedence
// (jinja2/parser.py): filters and tests bind tighter than arithmetic, `not` looser than comparison.
// Nesting (blocks, expression depth) is bounded so hostile templates cannot exhaust the stack.
#include <vector>

#include "glass/result.h"
#include "tokenizer/chat/ast.h"
#include "tokenizer/chat/lexer.h"

namespace glass::tokenizer::chat {

inline constexpr int kMaxBlockNesting = 64;      // nested if/for/macro/... blocks
inline constexpr int kMaxExpressionDepth = 256;  // height of one expression tree

// Errors: InvalidArgument "chat template:L:C: syntax error: ..." or Unsupported
// "chat template:L:C: unsupported: ..." for Jinja constructs this engine does not implement.
Result<Body> parse_template(const SourceText& src, const std::vector<Token>& tokens);

}  // namespace glass::tokenizer::chat
