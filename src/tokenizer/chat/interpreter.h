#pragma once
// Renders a parsed template: scopes as Jinja2 has them (a for-loop iteration, a macro call, a
// block set and a with block each get their own; if does not), Python semantics for operators,
// attribute and item access as Jinja's sandbox does them, and bounded work: a step budget, a
// call-depth limit and size limits on the output and on every string or list built.
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "glass/result.h"
#include "tokenizer/chat/ast.h"
#include "tokenizer/chat/lexer.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

struct RenderLimits {
  uint64_t max_steps = 20'000'000;      // statements, loop iterations, calls and filter applications
  int max_call_depth = 100;             // nested macro / caller() / recursive-loop calls
  size_t max_string_bytes = 16u << 20;  // the output and any string built while rendering
  size_t max_items = 1u << 20;          // elements of any list built while rendering (range(), *, +)
  // Bytes the strings, lists and dicts made by the render hold at once (LiveBytesScope), checked at
  // each step; a string or list made in one step can pass it by up to the bounds above.
  size_t max_live_bytes = 32u << 20;
  // Machine stack the renderer may use below its entry point (nested blocks, expressions and macro
  // calls all recurse). Render on a thread with more stack than this (8 MiB is usual).
  size_t max_stack_bytes = 2u << 20;
};

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  // The innermost binding of `name`, or nullptr.
  const Value* find(std::string_view name) const;
  void set(const std::string& name, Value v);
  const std::shared_ptr<Scope>& parent() const { return parent_; }

 private:
  std::vector<std::pair<std::string, Value>> vars_;
  std::shared_ptr<Scope> parent_;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

class Interpreter {
 public:
  Interpreter(const SourceText& src, const RenderLimits& limits, std::function<std::tm()> clock);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  Result<std::string> render(const Body& body, const ScopePtr& globals);

  // --- services for filters, tests, methods and builtins ---
  Result<Value> call_value(const Value& fn, CallArgs& args);
  Result<Value> apply_filter(std::string_view name, const Value& v, CallArgs& args);
  Result<bool> apply_test(std::string_view name, const Value& v, CallArgs& args);
  // Jinja's environment.getattr / getitem (sandboxed): methods, dict keys, undefined for misses.
  Result<Value> get_attr(const Value& obj, const std::string& name);
  Result<Value> get_item(const Value& obj, const Value& key);
  // Spends `n` steps of the budget; CapacityExceeded when it runs out.
  Status charge(uint64_t n = 1);
  // Spends steps in proportion to what an operation on `v` may cost: one per kBytesPerStep bytes of a
  // string, one per kItemsPerStep items of a list or dict (their top level). Filters, calls, methods,
  // operators, comparisons, tests, slices and `~` pay for their operands and results, so that the
  // step budget bounds time when each step works on a large string, not only statements.
  Status charge_size(const Value& v);
  // 8 bytes a step: the default 20M steps allow ~160 MB of string work in a render, so what a hostile
  // template keeps while it works stays near that (at 32 bytes a step, sorting [1 MB string] * 1000
  // kept 637 MB of lowered keys before its error); a real conversation's render costs ~10k steps a
  // 100 KB of text.
  static constexpr uint64_t kBytesPerStep = 8;
  static constexpr uint64_t kItemsPerStep = 4;
  Status charge_operands(const Value& a, const Value& b);
  Status charge_args(const CallArgs& args);
  Status check_string(size_t bytes) const;
  Status check_items(size_t n) const;
  // CapacityExceeded once recursion has used more than limits().max_stack_bytes of stack.
  Status check_stack() const;
  const RenderLimits& limits() const { return limits_; }
  std::tm now() const;
  // Registers a namespace object so render() can break reference cycles through it at the end.
  void track(const ObjPtr& obj) { tracked_.push_back(obj); }
  // Stops tracking obj (searched from the most recent), when nothing else can reach it any more.
  void untrack(const Object* obj);

  // --- used by macro, caller and loop objects ---
  Result<Value> call_macro(const Stmt& macro, const std::weak_ptr<Scope>& closure, CallArgs& args);
  Result<std::string> render_loop(const Stmt& loop, const ScopePtr& scope, const std::vector<Value>& items,
                                  int depth);

 private:
  Result<Flow> render_body(const Body& body, const ScopePtr& scope, std::string& out);
  Result<Flow> render_stmt(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status render_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status render_call_block(const Stmt& s, const ScopePtr& scope, std::string& out);
  Status assign(const Target& t, const Value& v, const ScopePtr& scope, size_t offset);
  Status append(std::string& out, std::string_view text) const;
  Result<Value> macro_value(const Stmt& s, const ScopePtr& scope);

  // --- expressions (eval.cpp) ---
 public:
  Result<Value> eval(const Expr& e, const ScopePtr& scope);

 private:
  Result<Value> eval_binary(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_compare(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_call(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_filter(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_test(const Expr& e, const ScopePtr& scope);
  Result<Value> eval_slice(const Expr& e, const ScopePtr& scope);
  Result<CallArgs> eval_args(const ArgExprs& a, const ScopePtr& scope);
  // `v`, unless it is nested deeper than kMaxNesting.
  Result<Value> nested_ok(size_t offset, Value v) const;

 public:
  // "chat template:L:C: <message>" unless `e` already carries a location.
  Error located(size_t offset, Error e) const;
  Error error_at(size_t offset, ErrorCode code, const std::string& message) const;

 private:
  const SourceText& src_;
  RenderLimits limits_;
  std::function<std::tm()> clock_;
  uint64_t steps_ = 0;
  const LiveBytesScope* live_ = nullptr;  // render()'s, while it runs
  uintptr_t stack_base_ = 0;              // frame address where render() started
  int call_depth_ = 0;
  ScopePtr root_;
  const Value* filter_input_ = nullptr;  // operand of the innermost {% filter %} / block-set chain
  std::vector<ObjPtr> tracked_;
};

// "UndefinedError: <hint>" for using an undefined value where a real one is needed.
Error undefined_error(const Value& v);

}  // namespace glass::tokenizer::chat
