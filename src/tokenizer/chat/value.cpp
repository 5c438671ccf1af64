#include "tokenizer/chat/value.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::InvalidArgument, "TypeError: " + message);
}

void repr_into(std::string& out, const Value& v, uint32_t depth, size_t max_bytes = kMaxReprBytes);

void repr_seq(std::string& out, const ListData& l, uint32_t depth, size_t max_bytes) {
  out.push_back(l.tuple ? '(' : '[');
  for (size_t i = 0; i < l.items.size(); ++i) {
    if (i) out += ", ";
    repr_into(out, l.items[i], depth + 1, max_bytes);
  }
  if (l.tuple && l.items.size() == 1) out.push_back(',');
  out.push_back(l.tuple ? ')' : ']');
}

void repr_into(std::string& out, const Value& v, uint32_t depth, size_t max_bytes) {
  if (depth > kMaxNesting || out.size() > max_bytes) {
    out += "...";
    return;
  }
  switch (v.kind()) {
    case Kind::String:
      out += py_repr_str(v.str());
      return;
    case Kind::List:
      repr_seq(out, v.list(), depth, max_bytes);
      return;
    case Kind::Dict: {
      out.push_back('{');
      bool first = true;
      for (const auto& [k, val] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        repr_into(out, k, depth + 1, max_bytes);
        out += ": ";
        repr_into(out, val, depth + 1, max_bytes);
      }
      out.push_back('}');
      return;
    }
    case Kind::Undefined:
      out += "Undefined";  // Jinja's Undefined.__repr__; str() of it is ""
      return;
    case Kind::Object:
      v.object()->write_repr(out, depth, max_bytes);
      return;
    default:
      out += to_py_str(v);
  }
}

}  // namespace

bool Object::set_attr(const std::string&, Value) { return false; }
void Object::write_repr(std::string& out, uint32_t, size_t) const {
  out.push_back('<');  // appends, not operator+: GCC 12 -O3 -Wrestrict false positive
  out += type_name();
  out += " object>";
}
Result<Value> Object::call(Interpreter&, CallArgs&) {
  return type_error(fmt::format("'{}' object is not callable", type_name()));
}

const Value* DictData::find(const Value& key) const {
  for (const auto& kv : items) {
    if (values_equal(kv.first, key)) return &kv.second;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& kv : items) {
    if (kv.first.is_string() && kv.first.str() == key) return &kv.second;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = Undefined{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

uint32_t Value::nesting() const {
  if (is_list()) return list().depth;
  if (is_dict()) return dict().depth;
  return 0;
}

uint64_t Value::tree_size() const {
  if (is_list()) return list().tree_size;
  if (is_dict()) return dict().tree_size;
  return 0;
}

namespace {

// Saturates far below overflow: a sum of a few such sizes still fits.
uint64_t add_size(uint64_t total, const Value& v) {
  constexpr uint64_t kCap = uint64_t{1} << 60;
  return std::min(kCap, total + 1 + std::min(kCap, v.tree_size()));
}

}  // namespace

namespace {

// This thread's live bytes, and how many scopes count them (a render inside a render, a test).
// Only counters: a value freed on another thread, or after its render, lowers that thread's count,
// which a scope then reads as fewer bytes held, never as memory unsafe.
thread_local int64_t t_live_bytes = 0;
thread_local int t_counting_scopes = 0;

// A heap block's header and rounding, roughly (a shared_ptr's control block, a vector's buffer).
constexpr int64_t kBlockBytes = 48;

int64_t count_live(size_t bytes) {
  if (t_counting_scopes == 0) return 0;
  const auto n = static_cast<int64_t>(bytes) + kBlockBytes;
  t_live_bytes += n;
  return n;
}
void release_live(int64_t counted) { t_live_bytes -= counted; }

// A string whose bytes are counted while it lives; a StrPtr points into it.
struct CountedString {
  CountedString(std::string t, int64_t n) : text(std::move(t)), counted(n) {}
  CountedString(const CountedString&) = delete;
  CountedString& operator=(const CountedString&) = delete;
  ~CountedString() { release_live(counted); }
  std::string text;
  int64_t counted;
};

}  // namespace

LiveBytesScope::LiveBytesScope() : base_(t_live_bytes) { ++t_counting_scopes; }
LiveBytesScope::~LiveBytesScope() { --t_counting_scopes; }
int64_t LiveBytesScope::held() const { return t_live_bytes - base_; }

ListData::~ListData() { release_live(counted); }
DictData::~DictData() { release_live(counted); }

Value::Value(std::string s) {
  if (t_counting_scopes == 0) {
    v_ = std::make_shared<const std::string>(std::move(s));
    return;
  }
  const int64_t counted = count_live(s.capacity() > 15 ? s.capacity() + 1 : 0);
  auto c = std::make_shared<CountedString>(std::move(s), counted);
  v_ = StrPtr(c, &c->text);
}

Value Value::list(std::vector<Value> items, bool tuple) {
  auto d = std::make_shared<ListData>();
  for (const Value& v : items) {
    d->depth = std::max(d->depth, v.nesting() + 1);
    d->tree_size = add_size(d->tree_size, v);
  }
  d->items = std::move(items);
  d->tuple = tuple;
  d->counted = count_live(d->items.capacity() * sizeof(Value));
  return Value(ListPtr(std::move(d)));
}

Value Value::dict(std::vector<std::pair<Value, Value>> items) {
  auto d = std::make_shared<DictData>();
  for (const auto& [k, v] : items) {
    d->depth = std::max({d->depth, k.nesting() + 1, v.nesting() + 1});
    d->tree_size = add_size(add_size(d->tree_size, k), v);
  }
  d->items = std::move(items);
  d->counted = count_live(d->items.capacity() * sizeof(std::pair<Value, Value>));
  return Value(DictPtr(std::move(d)));
}

Value Value::function(std::string name, std::function<Result<Value>(Interpreter&, CallArgs&)> fn) {
  return Value(FnPtr(std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)})));
}

double Value::to_double() const {
  if (is_float()) return as_float();
  if (is_int()) return static_cast<double>(as_int());
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return 0.0;
}

const std::string& Value::undefined_hint() const {
  static const std::string kNone = "UndefinedError: value is undefined";
  const auto& u = std::get<Undefined>(v_);
  return u.hint ? *u.hint : kNone;
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return as_bool();
    case Kind::Int:
      return as_int() != 0;
    case Kind::Float:
      return as_float() != 0.0;
    case Kind::String:
      return !str().empty();
    case Kind::List:
      return !list().items.empty();
    case Kind::Dict:
      return !dict().items.empty();
    case Kind::Callable:
    case Kind::Object:
      return true;
  }
  return false;
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::List:
      return list().tuple ? "tuple" : "list";
    case Kind::Dict:
      return "dict";
    case Kind::Callable:
      return "function";
    case Kind::Object:
      return object()->type_name();
  }
  return "object";
}

bool Value::same_object(const Value& o) const {
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::Bool:
    case Kind::Int:
    case Kind::Float:
      return values_equal(*this, o);
    case Kind::String:
      return str_ptr() == o.str_ptr() || str() == o.str();  // CPython interns short strings
    case Kind::List:
      return &list() == &o.list();
    case Kind::Dict:
      return &dict() == &o.dict();
    case Kind::Callable:
      return &callable() == &o.callable();
    case Kind::Object:
      return object() == o.object();
  }
  return false;
}

bool values_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.str() == b.str();
    case Kind::List: {
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!values_equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Kind::Dict: {
      const auto& x = a.dict();
      const auto& y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !values_equal(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.same_object(b);
  }
}

Result<bool> value_less(const Value& a, const Value& b, std::string_view op) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
    const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x < y;
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 byte order = code point order
  if (a.is_list() && b.is_list() && a.list().tuple == b.list().tuple) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (values_equal(x[i], y[i])) continue;
      return value_less(x[i], y[i], op);
    }
    return x.size() < y.size();
  }
  return type_error(
      fmt::format("'{}' not supported between instances of '{}' and '{}'", op, a.type_name(), b.type_name()));
}

std::string to_py_str(const Value& v, size_t max_bytes) {
  switch (v.kind()) {
    case Kind::Undefined:
      return "";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(v.as_int());
    case Kind::Float:
      return py_float_repr(v.as_float());
    case Kind::String:
      return v.str();
    case Kind::List:
    case Kind::Dict: {
      std::string out;
      repr_into(out, v, 0, max_bytes);
      return out;
    }
    case Kind::Callable:
      return "<function " + v.callable().name + ">";
    case Kind::Object: {
      std::string out;
      v.object()->write_repr(out, 0, max_bytes);
      return out;
    }
  }
  return "";
}

std::string to_py_repr(const Value& v) {
  std::string out;
  repr_into(out, v, 0);
  return out;
}

void write_repr(std::string& out, const Value& v, uint32_t depth, size_t max_bytes) {
  repr_into(out, v, depth, max_bytes);
}

Result<std::vector<Value>> iterate(const Value& v, size_t max_items) {
  switch (v.kind()) {
    case Kind::Undefined:
      return std::vector<Value>{};
    case Kind::List:
      return v.list().items;
    case Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.dict().items.size());
      for (const auto& kv : v.dict().items) keys.push_back(kv.first);
      return keys;
    }
    case Kind::String: {
      if (const size_t n = codepoint_count(v.str()); n > max_items) {
        return make_error(ErrorCode::CapacityExceeded,
                          fmt::format("a sequence of {} items exceeds the limit of {}", n, max_items));
      }
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(v.str())) {
        std::string s;
        append_utf8(s, c);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default:
      return type_error(fmt::format("'{}' object is not iterable", v.type_name()));
  }
}

Result<int64_t> length_of(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return int64_t{0};
    case Kind::String:
      return static_cast<int64_t>(codepoint_count(v.str()));
    case Kind::List:
      return static_cast<int64_t>(v.list().items.size());
    case Kind::Dict:
      return static_cast<int64_t>(v.dict().items.size());
    default:
      return type_error(fmt::format("object of type '{}' has no len()", v.type_name()));
  }
}

}  // namespace glass::tokenizer::chat
