#pragma once
// The parsed template: statements (Stmt) holding expressions (Expr). Every node keeps the byte
// offset of its first token, so errors name "line:column".
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,  // value
  Name,     // name
  List,     // items = elements
  Tuple,    // items = elements
  Dict,     // items = key0, value0, key1, value1, ...
  GetAttr,  // items[0] = object, name = attribute
  GetItem,  // items[0] = object, items[1] = key
  Slice,    // items[0] = object, items[1..3] = start, stop, step (null when absent)
  Call,     // items[0] = callee, args
  Filter,   // items[0] = operand (null inside {% filter %} blocks), name = filter, args
  Test,     // items[0] = operand, name = test, args; negated for "is not"
  Not,      // items[0]
  Neg,      // items[0]
  Pos,      // items[0]
  Binary,   // name = "+", "-", "*", "/", "//", "%", "**", "and", "or"; items[0], items[1]
  Concat,   // items = operands of "~"
  Compare,  // items[0] = first operand, then items[i + 1] compared with ops[i]
  Cond,     // items[0] = value, items[1] = condition, items[2] = else value (null: undefined)
};

// Arguments of a call, filter or test (the operand excluded).
struct ArgExprs {
  std::vector<ExprPtr> values;
  std::vector<std::string> names;  // one per value; "" for positional
  ExprPtr star;                    // *args
  ExprPtr star_star;               // **kwargs
};

struct Expr {
  ExprKind kind = ExprKind::Literal;
  size_t offset = 0;
  int depth = 1;  // height of this subtree; bounded by the parser
  std::string name;
  Value value;
  std::vector<ExprPtr> items;
  ArgExprs args;
  std::vector<std::string> ops;  // Compare: "==", "!=", "<", "<=", ">", ">=", "in", "not in"
  bool negated = false;
};

// An assignment target: a name, `ns.attr` (set only), or a tuple of targets.
struct Target {
  std::string name;
  std::string attr;  // non-empty: assign attribute `attr` of namespace `name`
  std::vector<Target> items;
  bool is_tuple = false;
};

struct Stmt;
using Body = std::vector<Stmt>;

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required
};

enum class StmtKind {
  Text,         // text
  Output,       // exprs[0]
  If,           // exprs = conditions (if, elif...), bodies = one per condition, then the else body
  For,          // target; exprs[0] = iterable, exprs[1] = filter (or null); bodies = body, else; recursive
  Set,          // target; exprs[0] = value
  SetBlock,     // target (a name or ns.attr); bodies[0]; exprs[0] = filter chain (null operand) or null
  Macro,        // name, params, bodies[0]; uses_* flags
  CallBlock,    // exprs[0] = the Call; params = caller's parameters; bodies[0] = caller's body
  FilterBlock,  // exprs[0] = filter chain with null innermost operand; bodies[0]
  With,         // targets; exprs = values; bodies[0]
  Block,        // bodies[0], rendered in a child scope ({% generation %})
  Break,
  Continue,
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  size_t offset = 0;
  std::string text;  // Text; Macro name
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
  Target target;
  std::vector<Target> targets;  // With
  std::vector<MacroParam> params;
  bool recursive = false;
  bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
};

}  // namespace glass::tokenizer::chat
