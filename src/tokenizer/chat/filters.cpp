// Jinja2's builtin filters (jinja2/filters.py) on template values: the string and number filters
// here, the sequence filters in filters_seq.cpp. `tojson` is transformers' version (json.dumps
// with ensure_ascii=False). Filters that are Jinja builtins but not implemented are rejected when
// the template is parsed, naming them (see is_known_filter).
#include "tokenizer/chat/filters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "tokenizer/chat/args.h"
#include "tokenizer/chat/json_value.h"
#include "tokenizer/chat/methods.h"
#include "tokenizer/chat/operators.h"
#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

Result<Value> f_string(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("string", args, {}); !a) return a.error();
  return Value(to_py_str(v));
}

Result<Value> f_trim(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("trim", args, {"chars"});
  if (!a) return a.error();
  auto chars = optional_string_arg("trim", "chars", (*a)[0]);
  if (!chars) return chars.error();
  return Value(py_strip(to_py_str(v), *chars, true, true));
}

template <std::string (*F)(std::string_view)>
Result<Value> str_filter(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("filter", args, {}); !a) return a.error();
  return Value(F(to_py_str(v)));
}

std::string jinja_title(std::string_view s) {
  // Words start after runs of '-', whitespace, '(', '{', '[' or '<'.
  const std::u32string u = decode_utf8(s);
  std::u32string out;
  bool word_start = true;
  for (char32_t c : u) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c);
    if (sep) {
      out.push_back(c);
      word_start = true;
      continue;
    }
    const std::string one = encode_utf8(std::u32string(1, c));
    out += decode_utf8(word_start ? py_upper(one) : py_lower(one));
    word_start = false;
  }
  return encode_utf8(out);
}

Result<Value> f_replace(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("replace", args, {"old", "new", "count"}, 2);
  if (!a) return a.error();
  const std::string old_s = to_py_str((*a)[0]), new_s = to_py_str((*a)[1]);
  auto count = int_arg("replace", "count", (*a)[2], -1);
  if (!count) return count.error();
  std::string out = py_replace(to_py_str(v), old_s, new_s, *count);
  if (Status s = in.check_string(out.size()); !s) return s.error();
  return Value(std::move(out));
}

Result<Value> f_indent(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("indent", args, {"width", "first", "blank"});
  if (!a) return a.error();
  std::string unit;
  if ((*a)[0].is_string()) {
    unit = (*a)[0].str();
  } else {
    auto width = int_arg("indent", "width", (*a)[0], 4);
    if (!width) return width.error();
    if (Status s = in.check_string(static_cast<size_t>(std::max<int64_t>(*width, 0))); !s) return s.error();
    unit.assign(static_cast<size_t>(std::max<int64_t>(*width, 0)), ' ');
  }
  const bool first = (*a)[1].truthy(), blank = (*a)[2].truthy();
  const std::vector<std::string> lines = py_splitlines(to_py_str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (blank || !lines[i].empty()) out += unit;
    }
    out += lines[i];
    if (Status s = in.check_string(out.size()); !s) return s.error();
  }
  if (first) out = unit + out;
  return Value(std::move(out));
}

Result<Value> f_center(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("center", args, {"width"});
  if (!a) return a.error();
  auto width = int_arg("center", "width", (*a)[0], 80);
  if (!width) return width.error();
  if (Status s = in.check_string(static_cast<size_t>(std::max<int64_t>(*width, 0))); !s) return s.error();
  const std::string s = to_py_str(v);
  const auto len = static_cast<int64_t>(codepoint_count(s));
  if (*width <= len) return Value(s);
  const auto total = static_cast<size_t>(*width - len);
  size_t left = total / 2;
  if ((total % 2) && (len % 2)) ++left;
  return Value(std::string(left, ' ') + s + std::string(total - left, ' '));
}

Result<Value> f_truncate(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("truncate", args, {"length", "killwords", "end", "leeway"});
  if (!a) return a.error();
  auto length = int_arg("truncate", "length", (*a)[0], 255);
  if (!length) return length.error();
  const std::string end = (*a)[2].is_undefined() ? "..." : to_py_str((*a)[2]);
  auto leeway = int_arg("truncate", "leeway", (*a)[3], 5);
  if (!leeway) return leeway.error();
  const auto end_len = static_cast<int64_t>(codepoint_count(end));
  if (*length < end_len)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("AssertionError: expected length >= {}, got {}", end_len, *length));
  if (*leeway < 0)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("AssertionError: expected leeway >= 0, got {}", *leeway));
  const std::u32string u = decode_utf8(to_py_str(v));
  if (static_cast<int64_t>(u.size()) <= *length + *leeway) return Value(encode_utf8(u));
  std::u32string head = u.substr(0, static_cast<size_t>(*length - end_len));
  if (!(*a)[1].truthy()) {
    const size_t sp = head.rfind(U' ');
    if (sp != std::u32string::npos) head.resize(sp);
  }
  return Value(encode_utf8(head) + end);
}

Result<Value> f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("wordcount", args, {}); !a) return a.error();
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(to_py_str(v))) {
    std::string one;
    append_utf8(one, c);
    const bool w = c == '_' || py_is_alnum(one);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

Result<Value> f_escape(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("escape", args, {}); !a) return a.error();
  std::string out;
  for (char c : to_py_str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return Value(std::move(out));
}

Result<Value> f_format(Interpreter& in, const Value& v, CallArgs& args) {
  if (!args.pos.empty() && !args.kw.empty()) {
    return make_error(ErrorCode::InvalidArgument,
                      "FilterArgumentError: can't handle positional and keyword arguments at the same time");
  }
  if (!args.kw.empty()) {
    std::vector<std::pair<Value, Value>> kw;
    for (auto& [k, x] : args.kw) kw.emplace_back(Value(k), x);
    return percent_format(in, to_py_str(v), Value::dict(std::move(kw)));
  }
  return percent_format(in, to_py_str(v), Value::list(args.pos, true));
}

Result<Value> f_default(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("default", args, {"default_value", "boolean"});
  if (!a) return a.error();
  const bool boolean = (*a)[1].truthy();
  if (v.is_undefined() || (boolean && !v.truthy())) return (*a)[0].is_undefined() ? Value("") : (*a)[0];
  return v;
}

// Python's int(str, base): optional sign, digits with single underscores, surrounding whitespace.
std::optional<int64_t> parse_int(const std::string& text, int base) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string digits;
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    digits.push_back(s[i]);
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long r = std::strtoll(digits.c_str(), &end, base);
  if (*end != '\0' || errno == ERANGE || !(std::isalnum(static_cast<unsigned char>(digits[0]))))
    return std::nullopt;
  return neg ? -r : r;
}

std::optional<double> parse_float(const std::string& text) {
  std::string s = py_strip(text, std::nullopt, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty() || clean.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return d;
}

Result<Value> f_int(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("int", args, {"default", "base"});
  if (!a) return a.error();
  const Value def = (*a)[0].is_undefined() ? Value(int64_t{0}) : (*a)[0];
  auto base = int_arg("int", "base", (*a)[1], 10);
  if (!base) return base.error();
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_string()) {
    if (auto i = parse_int(v.str(), static_cast<int>(*base))) return Value(*i);
    if (auto d = parse_float(v.str())) {
      if (!std::isfinite(*d))
        return make_error(ErrorCode::InvalidArgument,
                          "OverflowError: cannot convert float infinity to integer");
      if (auto i = as_integer(Value(*d))) return Value(*i);
    }
    return def;
  }
  if (v.is_number()) {
    if (auto i = as_integer(v)) return Value(*i);
    return make_error(ErrorCode::InvalidArgument, "OverflowError: cannot convert float to a 64-bit integer");
  }
  return def;
}

Result<Value> f_float(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("float", args, {"default"});
  if (!a) return a.error();
  const Value def = (*a)[0].is_undefined() ? Value(0.0) : (*a)[0];
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_number()) return Value(v.to_double());
  if (v.is_string()) {
    if (auto d = parse_float(v.str())) return Value(*d);
  }
  return def;
}

Result<Value> f_abs(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("abs", args, {}); !a) return a.error();
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    const int64_t i = *as_integer(v);
    if (i == std::numeric_limits<int64_t>::min())
      return make_error(ErrorCode::CapacityExceeded, "OverflowError: abs() overflow");
    return Value(i < 0 ? -i : i);
  }
  if (v.is_undefined()) return undefined_error(v);
  return type_error(fmt::format("bad operand type for abs(): '{}'", v.type_name()));
}

Result<Value> f_round(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("round", args, {"precision", "method"});
  if (!a) return a.error();
  auto precision = int_arg("round", "precision", (*a)[0], 0);
  if (!precision) return precision.error();
  const std::string method = (*a)[1].is_undefined() ? "common" : to_py_str((*a)[1]);
  if (method != "common" && method != "ceil" && method != "floor") {
    return make_error(ErrorCode::InvalidArgument,
                      "FilterArgumentError: method must be common, ceil or floor");
  }
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number())
    return type_error(fmt::format("type {} doesn't define __round__ method", v.type_name()));
  if (method == "common" && !v.is_float()) return Value(*as_integer(v));
  const double scale = std::pow(10.0, static_cast<double>(*precision));
  const double x = v.to_double() * scale;
  double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value(r / scale);
}

Result<Value> f_tojson(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  if (!a) return a.error();
  JsonDumpOptions opt;
  opt.ensure_ascii = (*a)[0].truthy();
  const Value& indent = (*a)[1];
  if (indent.is_string()) {
    opt.indent = indent.str();
  } else if (indent.is_int()) {
    opt.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 64)), ' ');
  } else if (!indent.is_undefined() && !indent.is_none()) {
    return type_error(fmt::format("tojson indent must be int, str or None, not {}", indent.type_name()));
  }
  const Value& seps = (*a)[2];
  if (seps.is_list()) {
    const auto& items = seps.list().items;
    if (items.size() != 2 || !items[0].is_string() || !items[1].is_string()) {
      return value_error("tojson separators must be a pair of strings");
    }
    opt.item_separator = items[0].str();
    opt.key_separator = items[1].str();
  } else if (!seps.is_undefined() && !seps.is_none()) {
    return type_error("tojson separators must be a pair of strings");
  }
  opt.sort_keys = (*a)[3].truthy();
  auto text = dump_json(v, opt, in.limits().max_string_bytes);
  if (!text) return text.error();
  return Value(std::move(*text));
}

Result<Value> f_safe(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("safe", args, {}); !a) return a.error();
  return Value(to_py_str(v));
}

Result<Value> f_attr(Interpreter& in, const Value& v, CallArgs& args) {
  auto a = bind_args("attr", args, {"name"}, 1);
  if (!a) return a.error();
  auto name = string_arg("attr", "name", (*a)[0]);
  if (!name) return name.error();
  if (v.is_dict()) {  // attr() looks up attributes only, never dict items
    if (auto m = find_method(v, *name)) return std::move(*m);
    return Value::undefined(fmt::format("UndefinedError: 'dict object' has no attribute '{}'", *name));
  }
  return in.get_attr(v, *name);
}

Result<Value> f_filesizeformat(Interpreter&, const Value& v, CallArgs& args) {
  auto a = bind_args("filesizeformat", args, {"binary"});
  if (!a) return a.error();
  double bytes = 0;
  if (v.is_number()) {
    bytes = v.to_double();
  } else if (v.is_string()) {
    auto d = parse_float(v.str());
    if (!d) return value_error(fmt::format("could not convert string to float: {}", to_py_repr(v)));
    bytes = *d;
  } else {
    return type_error(
        fmt::format("float() argument must be a string or a real number, not '{}'", v.type_name()));
  }
  const bool binary = (*a)[0].truthy();
  const double base = binary ? 1024 : 1000;
  static constexpr const char* kBinary[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
  static constexpr const char* kDecimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
  if (bytes == 1) return Value("1 Byte");
  if (bytes < base) return Value(fmt::format("{} Bytes", static_cast<int64_t>(bytes)));
  double unit = base;
  for (int i = 0; i < 8; ++i) {
    unit = std::pow(base, i + 2);
    if (bytes < unit || i == 7) {
      return Value(fmt::format("{:.1f} {}", base * bytes / unit, binary ? kBinary[i] : kDecimal[i]));
    }
  }
  return Value("");
}

// Python's urllib.parse.quote: unreserved bytes stay, the rest become %XX.
std::string url_quote(const std::string& s, bool for_query) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (!for_query && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else if (for_query && c == ' ') {
      out.push_back('+');
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

Result<Value> f_urlencode(Interpreter&, const Value& v, CallArgs& args) {
  if (auto a = bind_args("urlencode", args, {}); !a) return a.error();
  if (!(v.is_list() || v.is_dict())) return Value(url_quote(to_py_str(v), false));
  std::vector<std::pair<Value, Value>> pairs;
  if (v.is_dict()) {
    pairs = v.dict().items;
  } else {
    for (const Value& item : v.list().items) {
      if (!item.is_list() || item.list().items.size() != 2)
        return value_error("too many values to unpack (expected 2)");
      pairs.emplace_back(item.list().items[0], item.list().items[1]);
    }
  }
  std::string out;
  for (const auto& [k, x] : pairs) {
    if (!out.empty()) out += "&";
    out += url_quote(to_py_str(k), true) + "=" + url_quote(to_py_str(x), true);
  }
  return Value(std::move(out));
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kStringFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"capitalize", str_filter<py_capitalize>},
    {"center", f_center},
    {"d", f_default},
    {"default", f_default},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", f_filesizeformat},
    {"float", f_float},
    {"forceescape", f_escape},
    {"format", f_format},
    {"indent", f_indent},
    {"int", f_int},
    {"lower", str_filter<py_lower>},
    {"replace", f_replace},
    {"round", f_round},
    {"safe", f_safe},
    {"string", f_string},
    {"title", str_filter<jinja_title>},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"upper", str_filter<py_upper>},
    {"urlencode", f_urlencode},
    {"wordcount", f_wordcount},
};

// Jinja builtins that this engine does not implement: a template naming one fails to parse.
constexpr std::string_view kUnsupportedFilters[] = {"groupby", "pprint",   "random", "striptags",
                                                    "urlize",  "wordwrap", "xmlattr"};

}  // namespace

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kStringFilters) {
    if (f.name == name) return f.fn;
  }
  return find_sequence_filter(name);
}

bool is_unsupported_filter(std::string_view name) {
  return std::find(std::begin(kUnsupportedFilters), std::end(kUnsupportedFilters), name) !=
         std::end(kUnsupportedFilters);
}

Result<Value> Interpreter::apply_filter(std::string_view name, const Value& v, CallArgs& args) {
  if (Status s = charge(); !s) return s.error();
  const FilterFn fn = find_filter(name);
  if (!fn) {  // only reachable for names the parser let through in a soft frame, as Jinja does
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("TemplateRuntimeError: No filter named '{}' found.", name));
  }
  // Charged here rather than where a filter is written, so that map / select applying one to each
  // item pay by size too (mapping upper over [16 MB string] * 1000 made 16 GB for 1000 steps).
  if (Status s = charge_size(v); !s) return s.error();
  auto r = fn(*this, v, args);
  if (r) {
    if (Status s = charge_size(*r); !s) return s.error();
  }
  return r;
}

}  // namespace glass::tokenizer::chat
