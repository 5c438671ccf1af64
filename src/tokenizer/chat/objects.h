#pragma once
// Objects templates see: namespace() (the one mutable value), the `loop` variable of a for loop,
// joiner() and cycler().
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat/ast.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

class NamespaceObject : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::optional<Value> get_attr(std::string_view name) const override;
  bool set_attr(const std::string& name, Value v) override;
  void write_repr(std::string& out, uint32_t depth, size_t max_bytes) const override;
  void release() override { attrs_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
};

// `loop` inside a for loop. The interpreter advances index0; a recursive loop is called as
// loop(children) and renders the loop body again one level deeper.
class LoopObject : public Object {
 public:
  LoopObject(std::shared_ptr<const std::vector<Value>> items, int depth, const Stmt* stmt,
             std::weak_ptr<Scope> scope)
      : items_(std::move(items)), depth_(depth), stmt_(stmt), scope_(std::move(scope)) {}
  std::string type_name() const override { return "LoopContext"; }
  std::optional<Value> get_attr(std::string_view name) const override;
  void write_repr(std::string& out, uint32_t depth, size_t max_bytes) const override;
  Result<Value> call(Interpreter& in, CallArgs& args) override;
  void release() override { last_changed_.reset(); }

  size_t index0 = 0;

 private:
  std::shared_ptr<const std::vector<Value>> items_;
  int depth_;
  const Stmt* stmt_;
  std::weak_ptr<Scope> scope_;
  std::shared_ptr<std::optional<Value>> last_changed_ = std::make_shared<std::optional<Value>>();
};

class JoinerObject : public Object {
 public:
  explicit JoinerObject(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  std::optional<Value> get_attr(std::string_view) const override { return std::nullopt; }
  Result<Value> call(Interpreter& in, CallArgs& args) override;

 private:
  std::string sep_;
  bool used_ = false;
};

class CyclerObject : public Object {
 public:
  explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::optional<Value> get_attr(std::string_view name) const override;
  void release() override { items_.clear(); }

 private:
  std::vector<Value> items_;
  std::shared_ptr<size_t> pos_ = std::make_shared<size_t>(0);
};

// A macro (or a call block's caller) as a callable value; it keeps its defining scope weakly so a
// scope holding its own macro is not a reference cycle.
Value make_macro(const Stmt& s, const std::string& name, const ScopePtr& scope);

}  // namespace glass::tokenizer::chat
