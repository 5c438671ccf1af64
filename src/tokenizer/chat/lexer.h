#pragma once
// Template text -> tokens, as Jinja2's lexer does it with transformers' settings: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, "-" / "+" whitespace control on every tag, newlines
// normalized to "\n", {% raw %} blocks, and brace balancing inside tags (so "{{ {'a': 1} }}" works).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass::tokenizer::chat {

// The normalized template text, for turning byte offsets into "line:column".
class SourceText {
 public:
  explicit SourceText(std::string_view raw);
  const std::string& text() const { return text_; }
  // 1-based line and column (columns count code points).
  std::string location(size_t offset) const;

 private:
  std::string text_;
  std::vector<size_t> line_starts_;
};

enum class TokenType { Data, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, Eof };

struct Token {
  TokenType type = TokenType::Eof;
  std::string text;  // Data: the text; Name/Op: the spelling; String: the decoded value
  size_t offset = 0;
  int64_t int_value = 0;
  double float_value = 0;
};

// Errors are InvalidArgument "chat template:L:C: syntax error: ...".
Result<std::vector<Token>> tokenize(const SourceText& src);

}  // namespace glass::tokenizer::chat
