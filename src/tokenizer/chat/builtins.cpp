#include "tokenizer/chat/builtins.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "tokenizer/chat/args.h"
#include "tokenizer/chat/objects.h"

namespace glass::tokenizer::chat {
namespace {

Result<Value> b_range(Interpreter& in, CallArgs& args) {
  if (!args.kw.empty()) return type_error("range() takes no keyword arguments");
  if (args.pos.empty() || args.pos.size() > 3) {
    return type_error(fmt::format("range expected at most 3 arguments, got {}", args.pos.size()));
  }
  int64_t v[3] = {0, 0, 1};
  for (size_t i = 0; i < args.pos.size(); ++i) {
    const Value& a = args.pos[i];
    if (!(a.is_int() || a.is_bool())) {
      if (a.is_undefined()) return undefined_error(a);
      return type_error(fmt::format("'{}' object cannot be interpreted as an integer", a.type_name()));
    }
    v[i] = a.is_bool() ? a.as_bool() : a.as_int();
  }
  int64_t start = 0, stop = v[0], step = 1;
  if (args.pos.size() >= 2) {
    start = v[0];
    stop = v[1];
  }
  if (args.pos.size() == 3) step = v[2];
  if (step == 0) return value_error("range() arg 3 must not be zero");
  // Length computed in long double to avoid overflow on extreme bounds.
  const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  long double n = std::floor(step > 0 ? (span + step - 1) / step : (span + step + 1) / step);
  if (n < 0) n = 0;
  if (n > static_cast<long double>(kMaxRange)) {
    return make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).",
                    kMaxRange));
  }
  if (Status s = in.charge(static_cast<uint64_t>(n)); !s) return s.error();
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) items.emplace_back(start + i * step);
  return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs)
Result<Value> b_dict(Interpreter& in, CallArgs& args) {
  if (args.pos.size() > 1)
    return type_error(fmt::format("dict expected at most 1 argument, got {}", args.pos.size()));
  std::vector<std::pair<Value, Value>> items;
  auto put = [&](Value k, Value v) {
    for (auto& kv : items) {
      if (values_equal(kv.first, k)) {
        kv.second = std::move(v);
        return;
      }
    }
    items.emplace_back(std::move(k), std::move(v));
  };
  if (!args.pos.empty()) {
    const Value& a = args.pos[0];
    if (a.is_dict()) {
      for (const auto& [k, v] : a.dict().items) put(k, v);
    } else {
      auto seq = iterate(a, in.limits().max_items);
      if (!seq) return seq.error();
      for (const Value& pair : *seq) {
        if (!pair.is_list() || pair.list().items.size() != 2) {
          return value_error("dictionary update sequence element has the wrong length; 2 is required");
        }
        put(pair.list().items[0], pair.list().items[1]);
      }
    }
  }
  for (auto& [k, v] : args.kw) put(Value(k), v);
  return Value::dict(std::move(items));
}

Result<Value> b_namespace(Interpreter& in, CallArgs& args) {
  auto ns = std::make_shared<NamespaceObject>();
  if (args.pos.size() > 1) return type_error("namespace() takes at most 1 positional argument");
  if (!args.pos.empty()) {
    if (!args.pos[0].is_dict()) return type_error("namespace() positional argument must be a mapping");
    for (const auto& [k, v] : args.pos[0].dict().items) ns->set_attr(to_py_str(k), v);
  }
  for (auto& [k, v] : args.kw) ns->set_attr(k, v);
  ObjPtr obj = ns;
  in.track(obj);
  return Value(obj);
}

Result<Value> b_raise_exception(Interpreter&, CallArgs& args) {
  auto a = bind_args("raise_exception", args, {"message"}, 1);
  if (!a) return a.error();
  return make_error(ErrorCode::InvalidArgument, "TemplateError: " + to_py_str((*a)[0]));
}

Result<Value> b_strftime_now(Interpreter& in, CallArgs& args) {
  auto a = bind_args("strftime_now", args, {"format"}, 1);
  if (!a) return a.error();
  auto f = string_arg("strftime_now", "format", (*a)[0]);
  if (!f) return f.error();
  if (f->empty()) return Value("");
  const std::tm tm = in.now();
  // strftime returns 0 both for "too small" and for an empty result; grow a few times, then stop.
  for (size_t cap = 256; cap <= 65536; cap *= 4) {
    std::string buf(cap, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), f->c_str(), &tm);
    if (n > 0) {
      buf.resize(n);
      return Value(std::move(buf));
    }
  }
  return Value("");
}

Result<Value> b_joiner(Interpreter&, CallArgs& args) {
  auto a = bind_args("joiner", args, {"sep"});
  if (!a) return a.error();
  const std::string sep = (*a)[0].is_undefined() ? ", " : to_py_str((*a)[0]);
  return Value(ObjPtr(std::make_shared<JoinerObject>(sep)));
}

Result<Value> b_cycler(Interpreter& in, CallArgs& args) {
  if (!args.kw.empty()) return type_error("cycler() takes no keyword arguments");
  ObjPtr obj = std::make_shared<CyclerObject>(args.pos);
  in.track(obj);
  return Value(obj);
}

}  // namespace

void add_builtins(Scope& globals) {
  globals.set("range", Value::function("range", b_range));
  globals.set("dict", Value::function("dict", b_dict));
  globals.set("namespace", Value::function("namespace", b_namespace));
  globals.set("joiner", Value::function("joiner", b_joiner));
  globals.set("cycler", Value::function("cycler", b_cycler));
  globals.set("raise_exception", Value::function("raise_exception", b_raise_exception));
  globals.set("strftime_now", Value::function("strftime_now", b_strftime_now));
}

}  // namespace glass::tokenizer::chat
