#pragma once
// The parser's internals, shared by parser.cpp (statements), parser_expr.cpp (operators and
// primaries) and parser_postfix.cpp (postfix expressions, filters, tests, call arguments, targets).
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/chat/parser.h"

namespace glass::tokenizer::chat {

class Parser {
 public:
  Parser(const SourceText& src, const std::vector<Token>& tokens) : src_(src), toks_(tokens) {}

  Result<Body> parse_root();

  // --- expressions (parser_expr.cpp, parser_postfix.cpp) ---
  Result<ExprPtr> parse_expression(bool with_condexpr = true);
  // A comma-separated list; more than one item (or a trailing comma) makes a tuple.
  Result<ExprPtr> parse_tuple(bool with_condexpr = true,
                              std::initializer_list<std::string_view> end_names = {},
                              bool explicit_parens = false);
  Result<Target> parse_assign_target(bool with_namespace, std::initializer_list<std::string_view> end_names);
  Result<ArgExprs> parse_call_args();  // after '(' is current; consumes through ')'
  // The filters of {% filter f | g(x) %} (leading_pipe false) or {% set x | f | g %} (true),
  // applied to a null operand that stands for the block's rendered text.
  Result<ExprPtr> parse_filter_chain(bool leading_pipe);

 private:
  // --- tokens ---
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  bool is_op(std::string_view op) const { return cur().type == TokenType::Op && cur().text == op; }
  bool is_name(std::string_view name) const { return cur().type == TokenType::Name && cur().text == name; }
  bool tuple_end(std::initializer_list<std::string_view> end_names) const;
  std::string describe(const Token& t) const;
  Error fail(size_t offset, const std::string& message) const;
  Error unsupported(size_t offset, const std::string& what) const;
  Status expect_op(std::string_view op);
  Result<std::string> expect_name();
  Status expect_block_end(std::string_view tag);

  // --- statements (parser.cpp) ---
  // Parses statements until a block tag whose name is in `ends`; returns that name, with the
  // parser just after it. At top level (ends empty) it stops at end of input.
  Result<std::string> parse_body(Body& out, std::initializer_list<std::string_view> ends, size_t open_offset,
                                 std::string_view open_tag);
  Result<Stmt> parse_statement(const std::string& tag, size_t offset);
  Status parse_if(Stmt& s);
  Status parse_for(Stmt& s);
  Status parse_set(Stmt& s);
  Status parse_macro(Stmt& s);
  Status parse_call_block(Stmt& s);
  Status parse_filter_block(Stmt& s);
  Status parse_with(Stmt& s);
  Status parse_signature(std::vector<MacroParam>& params);

  // --- expression grammar (parser_expr.cpp, parser_postfix.cpp) ---
  Result<ExprPtr> parse_condexpr();
  Result<ExprPtr> parse_or();
  Result<ExprPtr> parse_and();
  Result<ExprPtr> parse_not();
  Result<ExprPtr> parse_compare();
  Result<ExprPtr> parse_math1();
  Result<ExprPtr> parse_concat();
  Result<ExprPtr> parse_math2();
  Result<ExprPtr> parse_pow();
  Result<ExprPtr> parse_unary(bool with_filter);
  Result<ExprPtr> parse_primary();
  Result<ExprPtr> parse_postfix(ExprPtr node);
  Result<ExprPtr> parse_filter_expr(ExprPtr node);
  Result<ExprPtr> parse_subscript(ExprPtr node);
  Result<ExprPtr> parse_subscribed();
  Result<ExprPtr> parse_filter(ExprPtr node);
  Result<ExprPtr> parse_filter_call(ExprPtr node, size_t offset);
  Result<ExprPtr> parse_test(ExprPtr node);
  Result<ExprPtr> parse_list_or_dict(bool is_dict);
  Result<std::string> parse_dotted_name();
  // Builds a node and checks the depth bound.
  Result<ExprPtr> make(ExprKind kind, size_t offset, std::vector<ExprPtr> items, std::string name = {});
  Result<ExprPtr> finish(ExprPtr node);  // sets depth from children, checks the bound
  void note_name(const std::string& name);

  const SourceText& src_;
  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int block_depth_ = 0;
  int recursion_ = 0;  // parser recursion (parentheses, not, unary, conditional)
  // Open macros (and call blocks), to record whether their bodies use varargs/kwargs/caller.
  std::vector<Stmt*> macro_stack_;
};

// RAII bound on parser recursion.
class RecursionGuard {
 public:
  explicit RecursionGuard(int& depth) : depth_(depth) { ++depth_; }
  ~RecursionGuard() { --depth_; }
  RecursionGuard(const RecursionGuard&) = delete;
  RecursionGuard& operator=(const RecursionGuard&) = delete;
  bool exceeded(int limit) const { return depth_ > limit; }

 private:
  int& depth_;
};

}  // namespace glass::tokenizer::chat
