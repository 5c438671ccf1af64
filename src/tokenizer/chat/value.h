#pragma once
// The chat-template engine's values, with Python/Jinja2 semantics: undefined, None, bool, int,
// float, str, list/tuple, dict (insertion-ordered, as Python's), callables (macros, builtins, bound
// methods) and objects (namespace(), loop, joiner, cycler). Lists, dicts and strings are immutable
// and shared (templates run in an immutable sandbox, as transformers' ImmutableSandboxedEnvironment);
// only namespace objects (and the loop's internal state) change.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "glass/result.h"

namespace glass::tokenizer::chat {

class Value;
class Interpreter;

// Positional and keyword arguments of a call, evaluated.
struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// A value that is not defined. `hint` is the error raised when it is used, with its Python type:
// "UndefinedError: 'x' is undefined", "UndefinedError: 'dict object' has no attribute 'y'".
struct Undefined {
  std::shared_ptr<const std::string> hint;
};
struct NoneValue {};

// Lists and dicts know their nesting depth (1 + the deepest element), so the interpreter can refuse
// values nested deeper than kMaxNesting before any recursive walk (repr, ==, tojson, destruction)
// could exhaust the stack.
inline constexpr uint32_t kMaxNesting = 256;

// They also know their tree size: the values a walk of them visits, an element held twice counted
// twice. [a, a] doubled 60 times is 61 lists in memory but 2^61 values to compare or print, so the
// interpreter charges a walk by this size, not by the top level's length.
struct ListData {
  ListData() = default;
  ListData(const ListData&) = delete;
  ListData& operator=(const ListData&) = delete;
  ~ListData();
  std::vector<Value> items;
  bool tuple = false;  // repr "(a, b)" and equality that never matches a list
  uint32_t depth = 1;
  uint64_t tree_size = 0;
  int64_t counted = 0;  // bytes added to the render's live bytes (LiveBytesScope)
};

struct DictData {
  DictData() = default;
  DictData(const DictData&) = delete;
  DictData& operator=(const DictData&) = delete;
  ~DictData();
  std::vector<std::pair<Value, Value>> items;  // insertion order
  uint32_t depth = 1;
  uint64_t tree_size = 0;
  int64_t counted = 0;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
};

// The bytes the strings, lists and dicts made on this thread while a scope is open hold now, less
// what they held when it opened: what a render keeps alive at once, which the interpreter bounds
// (RenderLimits::max_live_bytes). Steps bound the work; a template could otherwise keep a list of
// 1 MB strings, ~160 MB, alive within them. Values made outside a scope are not counted.
class LiveBytesScope {
 public:
  LiveBytesScope();
  ~LiveBytesScope();
  LiveBytesScope(const LiveBytesScope&) = delete;
  LiveBytesScope& operator=(const LiveBytesScope&) = delete;
  int64_t held() const;

 private:
  int64_t base_;
};

// A function value: builtin globals, bound methods ("abc".upper) and macros.
struct Callable {
  std::string name;
  std::function<Result<Value>(Interpreter&, CallArgs&)> fn;
};

// Objects with attributes (namespace, loop, joiner, cycler).
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  // nullopt: no such attribute.
  virtual std::optional<Value> get_attr(std::string_view name) const = 0;
  // Only namespace() objects accept attribute assignment.
  virtual bool set_attr(const std::string& name, Value v);
  // Appends repr() to `out`; `depth` is how deep inside other values' reprs this one is.
  virtual void write_repr(std::string& out, uint32_t depth, size_t max_bytes) const;
  // Objects that can be called (loop in a recursive for, cycler.next...) override this.
  virtual Result<Value> call(Interpreter& in, CallArgs& args);
  // Drops held values at the end of a render, breaking reference cycles (ns.self = ns).
  virtual void release() {}
};

using StrPtr = std::shared_ptr<const std::string>;
using ListPtr = std::shared_ptr<const ListData>;
using DictPtr = std::shared_ptr<const DictData>;
using FnPtr = std::shared_ptr<const Callable>;
using ObjPtr = std::shared_ptr<Object>;

enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable, Object };

class Value {
 public:
  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint);
  static Value none() {
    Value v;
    v.v_ = NoneValue{};
    return v;
  }
  Value(bool b) : v_(b) {}                         // NOLINT(google-explicit-constructor)
  Value(int64_t i) : v_(i) {}                      // NOLINT(google-explicit-constructor)
  Value(int i) : v_(static_cast<int64_t>(i)) {}    // NOLINT(google-explicit-constructor)
  Value(double d) : v_(d) {}                       // NOLINT(google-explicit-constructor)
  Value(std::string s);                            // NOLINT(google-explicit-constructor)
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT(google-explicit-constructor)
  Value(StrPtr s) : v_(std::move(s)) {}            // NOLINT(google-explicit-constructor)
  Value(ListPtr l) : v_(std::move(l)) {}           // NOLINT(google-explicit-constructor)
  Value(DictPtr d) : v_(std::move(d)) {}           // NOLINT(google-explicit-constructor)
  Value(FnPtr f) : v_(std::move(f)) {}             // NOLINT(google-explicit-constructor)
  Value(ObjPtr o) : v_(std::move(o)) {}            // NOLINT(google-explicit-constructor)
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::vector<std::pair<Value, Value>> items);
  static Value function(std::string name, std::function<Result<Value>(Interpreter&, CallArgs&)> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // Python: bool is a Number
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_callable() const { return kind() == Kind::Callable; }
  bool is_object() const { return kind() == Kind::Object; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // int, bool or float widened to double (caller checks is_number()).
  double to_double() const;
  const std::string& str() const { return *std::get<StrPtr>(v_); }
  const StrPtr& str_ptr() const { return std::get<StrPtr>(v_); }
  const ListData& list() const { return *std::get<ListPtr>(v_); }
  const DictData& dict() const { return *std::get<DictPtr>(v_); }
  const Callable& callable() const { return *std::get<FnPtr>(v_); }
  const ObjPtr& object() const { return std::get<ObjPtr>(v_); }
  const std::string& undefined_hint() const;

  // Python truthiness (undefined is false).
  bool truthy() const;
  // Python type name, as in TypeError messages: 'str', 'NoneType', 'dict', 'Undefined', ...
  std::string type_name() const;
  // Container nesting depth: 0 for scalars and objects.
  uint32_t nesting() const;
  uint64_t tree_size() const;  // lists and dicts: the values inside, at every depth (ListData); else 0
  // True when both refer to the same shared object (the `sameas` test).
  bool same_object(const Value& other) const;

 private:
  std::variant<Undefined, NoneValue, bool, int64_t, double, StrPtr, ListPtr, DictPtr, FnPtr, ObjPtr> v_;
};

// Python ==, with Jinja's undefined == undefined.
bool values_equal(const Value& a, const Value& b);
// Python <: numbers, strings (code point order), lists/tuples lexicographic. Anything else is a
// TypeError message ("'<' not supported between instances of 'int' and 'str'").
Result<bool> value_less(const Value& a, const Value& b, std::string_view op = "<");
// Python str(): None -> "None", True -> "True", containers as repr, undefined -> "". Objects can
// refer to themselves (ns.me = ns), so the walk stops expanding past kMaxNesting levels or
// `max_bytes` of text, writing "..." there; callers bound the result's size anyway.
inline constexpr size_t kMaxReprBytes = 64u << 20;
std::string to_py_str(const Value& v, size_t max_bytes = kMaxReprBytes);
// Python repr(): strings quoted.
std::string to_py_repr(const Value& v);
// Appends repr() of a value nested `depth` levels inside another one's repr (for Object::write_repr).
void write_repr(std::string& out, const Value& v, uint32_t depth, size_t max_bytes);
// Iteration as Python/Jinja does it: list/tuple items, dict keys, str code points, undefined
// empty. Anything else: a TypeError message ("'int' object is not iterable"). A string of more than
// `max_items` code points is CapacityExceeded before any is listed (RenderLimits::max_items: a
// 16 MB string listed as 16M one-character strings took 1.5 GB, batched 3.2 GB).
Result<std::vector<Value>> iterate(const Value& v, size_t max_items);
// Python len(): str (code points), list, dict; undefined 0. Else a TypeError message.
Result<int64_t> length_of(const Value& v);

}  // namespace glass::tokenizer::chat
