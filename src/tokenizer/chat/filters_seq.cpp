// Jinja2's sequence and mapping filters: first, last, length, list, join, items, dictsort, sort,
// unique, min, max, sum, map, select/reject, selectattr/rejectattr, batch, reverse. Filters that
// return generators in Jinja (map, select, unique, items, ...) return lists here; they behave the
// same under iteration, |list, |join and |length.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_set>

#include "tokenizer/chat/args.h"
#include "tokenizer/chat/filters.h"
#include "tokenizer/chat/operators.h"
#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

// Jinja's make_attrgetter: "a.b.0" walks getitem steps (digits become integer indices).
Result<Value> attr_path(Interpreter& in, const Value& item, const std::string& path) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    auto next =
        in.get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(part.substr(0, 18)))) : Value(part));
    if (!next) return next;
    v = std::move(*next);
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// A key for sorting/comparing: lowercased strings unless case-sensitive.
Value fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(py_lower(v.str()));
  return v;
}

Result<std::vector<Value>> keys_of(Interpreter& in, const std::vector<Value>& items, const Value& attribute,
                                   bool case_sensitive) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    Value k = item;
    if (!attribute.is_undefined() && !attribute.is_none()) {
      auto a = attr_path(in, item, to_py_str(attribute));
      if (!a) return a.error();
      k = std::move(*a);
    }
    // Folding copies each string, comparing reads it: charged by size (sorting [1 MB string] * 1000
    // lowered 1 GB for 250 steps).
    if (Status st = in.charge_size(k); !st) return st.error();
    keys.push_back(fold(k, case_sensitive));
  }
  return keys;
}

// What unique() tells scalars apart by: numbers by value (1, 1.0 and True are one, as in Python),
// strings by text. Containers have none: they are compared one by one.
std::optional<std::string> scalar_key(const Value& k) {
  switch (k.kind()) {
    case Kind::Undefined:
      return "u";
    case Kind::None:
      return "n";
    case Kind::Bool:
      return k.as_bool() ? "i1" : "i0";
    case Kind::Int:
      return fmt::format("i{}", k.as_int());
    case Kind::Float: {
      const double d = k.as_float();
      if (std::nearbyint(d) == d && std::fabs(d) < 9.2e18) return fmt::format("i{}", static_cast<int64_t>(d));
      return fmt::format("f{}", d);
    }
    case Kind::String:
      return fmt::format("s{}", k.str());
    default:
      return std::nullopt;
  }
}

// Stable sort of indices by keys with Python's comparison; a TypeError if keys do not compare.
Result<std::vector<size_t>> sorted_order(const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> idx(keys.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  Status failed;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    auto lt = reverse ? value_less(keys[b], keys[a]) : value_less(keys[a], keys[b]);
    if (!lt) {
      if (failed) failed = lt.error();
      return false;
    }
    return *lt;
  });
  if (!failed) return failed.error();
  return idx;
}

Result<Value> f_first(Interpreter& in, const Value& v, CallArgs& args) {
  if (auto a = bind_args("first", args, {}); !a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  if (items->empty()) return Value::undefined("UndefinedError: No first item, sequence was empty.");
  return items->front();
}

Result<Value> f_last(Interpreter& in, const Value& v, CallArgs& args) {
  if (auto a = bind_args("last", args, {}); !a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  if (items->empty()) return Value::undefined("UndefinedError: No last item, sequence was empty.");
  return items->back();
}

Result<Value> f_length(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("length", args, {}); !a) return a.error();
  auto n = length_of(v);
  if (!n) return n.error();
  return Value(*n);
}

Result<Value> f_list(Interpreter& in, const Value& v, CallArgs& args) {
  if (auto a = bind_args("list", args, {}); !a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  return Value::list(std::move(*items));
}

Result<Value> f_join(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("join", args, {"d", "attribute"});
  if (!a) return a.error();
  const std::string sep = (*a)[0].is_undefined() ? "" : to_py_str((*a)[0]);
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  std::string out;
  for (size_t i = 0; i < items->size(); ++i) {
    Value item = (*items)[i];
    if (!(*a)[1].is_undefined() && !(*a)[1].is_none()) {
      auto x = attr_path(in, item, to_py_str((*a)[1]));
      if (!x) return x;
      item = std::move(*x);
    }
    if (i) out += sep;
    out += to_py_str(item);
    if (Status s = in.check_string(out.size()); !s) return s.error();
  }
  return Value(std::move(out));
}

Result<Value> f_items(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("items", args, {}); !a) return a.error();
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) return type_error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict().items) out.push_back(Value::list({k, x}, true));
  return Value::list(std::move(out));
}

Result<Value> f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("dictsort", args, {"case_sensitive", "by", "reverse"});
  if (!a) return a.error();
  if (!v.is_dict()) return type_error("dictsort expects a mapping");
  const std::string by = (*a)[1].is_undefined() ? "key" : to_py_str((*a)[1]);
  if (by != "key" && by != "value")
    return make_error(ErrorCode::InvalidArgument,
                      "FilterArgumentError: You can only sort by either \"key\" or \"value\"");
  std::vector<Value> keys;
  for (const auto& [k, x] : v.dict().items) keys.push_back(fold(by == "key" ? k : x, (*a)[0].truthy()));
  auto order = sorted_order(keys, (*a)[2].truthy());
  if (!order) return order.error();
  std::vector<Value> out;
  for (size_t i : *order)
    out.push_back(Value::list({v.dict().items[i].first, v.dict().items[i].second}, true));
  return Value::list(std::move(out));
}

Result<Value> f_sort(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("sort", args, {"reverse", "case_sensitive", "attribute"});
  if (!a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  auto keys = keys_of(in, *items, (*a)[2], (*a)[1].truthy());
  if (!keys) return keys.error();
  auto order = sorted_order(*keys, (*a)[0].truthy());
  if (!order) return order.error();
  std::vector<Value> out;
  for (size_t i : *order) out.push_back((*items)[i]);
  return Value::list(std::move(out));
}

Result<Value> f_unique(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("unique", args, {"case_sensitive", "attribute"});
  if (!a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  auto keys = keys_of(in, *items, (*a)[1], (*a)[0].truthy());
  if (!keys) return keys.error();
  // Scalars are looked up (100k distinct ones compared pairwise took 21 s for 100k steps); other keys
  // are compared with each kept one, a step each.
  std::vector<Value> out, seen;
  std::unordered_set<std::string> seen_scalars;
  for (size_t i = 0; i < items->size(); ++i) {
    const Value& k = (*keys)[i];
    if (auto key = scalar_key(k)) {
      if (!seen_scalars.insert(std::move(*key)).second) continue;
    } else {
      if (Status st = in.charge(seen.size()); !st) return st.error();
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return values_equal(s, k); })) continue;
      seen.push_back(k);
    }
    out.push_back((*items)[i]);
    if (Status st = in.charge(); !st) return st.error();
  }
  return Value::list(std::move(out));
}

Result<Value> min_max(Interpreter& in, const Value& v, CallArgs& args, bool is_max) {
  auto a = bind_args(is_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  if (!a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  if (items->empty())
    return Value::undefined(fmt::format("UndefinedError: No aggregated item, sequence was empty."));
  auto keys = keys_of(in, *items, (*a)[1], (*a)[0].truthy());
  if (!keys) return keys.error();
  size_t best = 0;
  for (size_t i = 1; i < items->size(); ++i) {
    auto lt = is_max ? value_less((*keys)[best], (*keys)[i]) : value_less((*keys)[i], (*keys)[best]);
    if (!lt) return lt.error();
    if (*lt) best = i;
  }
  return (*items)[best];
}

Result<Value> f_min(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, false); }
Result<Value> f_max(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, true); }

Result<Value> f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("sum", args, {"attribute", "start"});
  if (!a) return a.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  Value total = (*a)[1].is_undefined() ? Value(int64_t{0}) : (*a)[1];
  if (total.is_string()) return type_error("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : *items) {
    Value x = item;
    if (!(*a)[0].is_undefined() && !(*a)[0].is_none()) {
      auto got = attr_path(in, item, to_py_str((*a)[0]));
      if (!got) return got;
      x = std::move(*got);
    }
    auto r = binary_op(in, "+", total, x);
    if (!r) return r;
    total = std::move(*r);
  }
  return total;
}

// map(filter_name, *args) or map(attribute="a.b", default=...). A false value (None, "", []) maps
// to nothing, as Jinja's `if value:` guard has it.
Result<Value> f_map(Interpreter& in, const Value& v, CallArgs& args) {
  auto items =
      v.truthy() ? iterate(v, in.limits().max_items) : Result<std::vector<Value>>(std::vector<Value>{});
  if (!items) return items.error();
  std::vector<Value> out;
  out.reserve(items->size());
  if (args.pos.empty()) {
    auto a = bind_args("map", args, {"attribute", "default"}, 1);
    if (!a) return a.error();
    const std::string path = to_py_str((*a)[0]);
    for (const Value& item : *items) {
      auto x = attr_path(in, item, path);
      if (!x) return x;
      out.push_back(x->is_undefined() && !(*a)[1].is_undefined() ? (*a)[1] : std::move(*x));
    }
    return Value::list(std::move(out));
  }
  if (!args.pos[0].is_string()) return type_error("map() filter name must be a string");
  const std::string name = args.pos[0].str();
  CallArgs rest{std::vector<Value>(args.pos.begin() + 1, args.pos.end()), args.kw};
  for (const Value& item : *items) {
    CallArgs copy = rest;
    auto x = in.apply_filter(name, item, copy);
    if (!x) return x;
    out.push_back(std::move(*x));
  }
  return Value::list(std::move(out));
}

// select / reject (test on the item) and selectattr / rejectattr (test on an attribute). A false
// value selects nothing, as Jinja's `if value:` guard has it.
Result<Value> select_like(Interpreter& in, const Value& v, CallArgs& args, bool keep_if, bool by_attr) {
  auto items =
      v.truthy() ? iterate(v, in.limits().max_items) : Result<std::vector<Value>>(std::vector<Value>{});
  if (!items) return items.error();
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (args.pos.empty() || !args.pos[0].is_string())
      return type_error("Missing parameter for attribute name");
    attr = args.pos[0].str();
    next = 1;
  }
  std::string test;
  if (next < args.pos.size()) {
    if (!args.pos[next].is_string()) return type_error("test name must be a string");
    test = args.pos[next].str();
    ++next;
  }
  CallArgs rest{
      std::vector<Value>(args.pos.begin() + static_cast<std::ptrdiff_t>(std::min(next, args.pos.size())),
                         args.pos.end()),
      args.kw};
  std::vector<Value> out;
  for (const Value& item : *items) {
    Value subject = item;
    if (by_attr) {
      auto x = attr_path(in, item, attr);
      if (!x) return x;
      subject = std::move(*x);
    }
    bool ok = false;
    if (test.empty()) {
      ok = subject.truthy();
    } else {
      CallArgs copy = rest;
      auto r = in.apply_test(test, subject, copy);
      if (!r) return r.error();
      ok = *r;
    }
    if (ok == keep_if) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Result<Value> f_select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_like(in, v, a, true, false);
}
Result<Value> f_reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_like(in, v, a, false, false);
}
Result<Value> f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_like(in, v, a, true, true);
}
Result<Value> f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_like(in, v, a, false, true);
}

Result<Value> f_batch(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("batch", args, {"linecount", "fill_with"}, 1);
  if (!a) return a.error();
  auto count = int_arg("batch", "linecount", (*a)[0], 1);
  if (!count) return count.error();
  if (*count <= 0) return value_error("batch linecount must be positive");
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  std::vector<Value> out, cur;
  for (const Value& item : *items) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == *count) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (!(*a)[1].is_undefined() && !(*a)[1].is_none()) {
      if (Status s = in.check_items(static_cast<size_t>(*count)); !s) return s.error();
      while (static_cast<int64_t>(cur.size()) < *count) cur.push_back((*a)[1]);
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Result<Value> f_reverse(Interpreter& in, const Value& v, CallArgs& args) {
  if (auto a = bind_args("reverse", args, {}); !a) return a.error();
  if (v.is_string()) {
    std::u32string u = decode_utf8(v.str());
    std::reverse(u.begin(), u.end());
    return Value(encode_utf8(u));
  }
  auto items = iterate(v, in.limits().max_items);
  if (!items)
    return type_error(fmt::format("argument to reverse() must be a sequence, not {}", v.type_name()));
  std::reverse(items->begin(), items->end());
  return Value::list(std::move(*items));
}

Result<Value> f_slice(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("slice", args, {"slices", "fill_with"}, 1);
  if (!a) return a.error();
  auto slices = int_arg("slice", "slices", (*a)[0], 1);
  if (!slices) return slices.error();
  if (*slices <= 0) return value_error("slice() slices must be positive");
  if (Status s = in.check_items(static_cast<size_t>(*slices)); !s) return s.error();
  auto items = iterate(v, in.limits().max_items);
  if (!items) return items.error();
  const auto length = static_cast<int64_t>(items->size());
  const int64_t per = length / *slices, with_extra = length % *slices;
  const bool fill = !(*a)[1].is_undefined() && !(*a)[1].is_none();
  std::vector<Value> out;
  int64_t offset = 0;
  for (int64_t k = 0; k < *slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < with_extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> part(items->begin() + start, items->begin() + end);
    if (fill && k >= with_extra) part.push_back((*a)[1]);
    out.push_back(Value::list(std::move(part)));
  }
  return Value::list(std::move(out));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kSequenceFilters[] = {
    {"batch", f_batch},
    {"count", f_length},
    {"dictsort", f_dictsort},
    {"first", f_first},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"reverse", f_reverse},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", f_slice},
    {"sort", f_sort},
    {"sum", f_sum},
    {"unique", f_unique},
};

}  // namespace

FilterFn find_sequence_filter(std::string_view name) {
  for (const auto& f : kSequenceFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace glass::tokenizer::chat
