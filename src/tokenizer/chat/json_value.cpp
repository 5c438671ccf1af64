#include "tokenizer/chat/json_value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

Error type_error(std::string message) {
  return make_error(ErrorCode::InvalidArgument, "TypeError: " + message);
}

void escape_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  auto hex4 = [&](unsigned v) { out += fmt::format("\\u{:04x}", v); };
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      hex4(c);
    } else if (ensure_ascii && c >= 0x7F) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        hex4(0xD800 + (v >> 10));
        hex4(0xDC00 + (v & 0x3FF));
      } else {
        hex4(c);
      }
    } else {
      append_utf8(out, c);
    }
  }
  out.push_back('"');
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(d);
}

class Dumper {
 public:
  Dumper(const JsonDumpOptions& opt, size_t max_bytes) : opt_(opt), max_bytes_(max_bytes) {
    item_sep_ = opt.item_separator ? *opt.item_separator : (opt.indent ? "," : ", ");
  }

  Status dump(const Value& v, int depth) {
    if (out.size() > max_bytes_) {
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("tojson output exceeds {} bytes", max_bytes_));
    }
    if (depth > 512) return make_error(ErrorCode::CapacityExceeded, "tojson: nesting deeper than 512");
    switch (v.kind()) {
      case Kind::None:
        out += "null";
        return {};
      case Kind::Bool:
        out += v.as_bool() ? "true" : "false";
        return {};
      case Kind::Int:
        out += std::to_string(v.as_int());
        return {};
      case Kind::Float:
        out += float_json(v.as_float());
        return {};
      case Kind::String:
        escape_string(out, v.str(), opt_.ensure_ascii);
        return {};
      case Kind::List:
        return dump_list(v.list(), depth);
      case Kind::Dict:
        return dump_dict(v.dict(), depth);
      default:
        return type_error(fmt::format("Object of type {} is not JSON serializable", v.type_name()));
    }
  }

  std::string out;

 private:
  void newline(int depth) {
    if (!opt_.indent) return;
    out.push_back('\n');
    for (int i = 0; i < depth; ++i) out += *opt_.indent;
  }

  Status dump_list(const ListData& l, int depth) {
    if (l.items.empty()) {
      out += "[]";
      return {};
    }
    out.push_back('[');
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += item_sep_;
      newline(depth + 1);
      if (Status s = dump(l.items[i], depth + 1); !s) return s;
    }
    newline(depth);
    out.push_back(']');
    return {};
  }

  Result<std::string> key_text(const Value& k) {
    switch (k.kind()) {
      case Kind::String:
        return k.str();
      case Kind::Int:
        return std::to_string(k.as_int());
      case Kind::Float:
        return float_json(k.as_float());
      case Kind::Bool:
        return std::string(k.as_bool() ? "true" : "false");
      case Kind::None:
        return std::string("null");
      default:
        return type_error(fmt::format("keys must be str, int, float, bool or None, not {}", k.type_name()));
    }
  }

  Status dump_dict(const DictData& d, int depth) {
    if (d.items.empty()) {
      out += "{}";
      return {};
    }
    std::vector<const std::pair<Value, Value>*> items;
    for (const auto& kv : d.items) items.push_back(&kv);
    if (opt_.sort_keys) {
      Status failed;
      std::stable_sort(items.begin(), items.end(), [&](const auto* a, const auto* b) {
        auto lt = value_less(a->first, b->first);
        if (!lt && failed) failed = lt.error();
        return lt && *lt;
      });
      if (!failed) return failed;
    }
    out.push_back('{');
    bool first = true;
    for (const auto* kv : items) {
      if (!first) out += item_sep_;
      first = false;
      newline(depth + 1);
      auto key = key_text(kv->first);
      if (!key) return key.error();
      escape_string(out, *key, opt_.ensure_ascii);
      out += opt_.key_separator;
      if (Status s = dump(kv->second, depth + 1); !s) return s;
    }
    newline(depth);
    out.push_back('}');
    return {};
  }

  const JsonDumpOptions& opt_;
  size_t max_bytes_;
  std::string item_sep_;
};

}  // namespace

namespace {

Result<Value> from_json(const nlohmann::ordered_json& j, uint32_t depth) {
  using T = nlohmann::ordered_json::value_t;
  if (depth > kMaxNesting) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("JSON nested deeper than {} levels", kMaxNesting));
  }
  switch (j.type()) {
    case T::null:
      return Value::none();
    case T::boolean:
      return Value(j.get<bool>());
    case T::number_integer:
      return Value(j.get<int64_t>());
    case T::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return make_error(ErrorCode::InvalidArgument, fmt::format("integer {} does not fit in 64 bits", u));
      }
      return Value(static_cast<int64_t>(u));
    }
    case T::number_float:
      return Value(j.get<double>());
    case T::string:
      return Value(j.get<std::string>());
    case T::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        auto v = from_json(e, depth + 1);
        if (!v) return v;
        items.push_back(std::move(*v));
      }
      return Value::list(std::move(items));
    }
    case T::object: {
      std::vector<std::pair<Value, Value>> items;
      items.reserve(j.size());
      for (const auto& [k, e] : j.items()) {
        auto v = from_json(e, depth + 1);
        if (!v) return v;
        items.emplace_back(Value(k), std::move(*v));
      }
      return Value::dict(std::move(items));
    }
    default:
      return make_error(ErrorCode::InvalidArgument, "binary JSON values are not supported");
  }
}

}  // namespace

Result<Value> value_from_json(const nlohmann::ordered_json& j) { return from_json(j, 1); }

Result<std::string> dump_json(const Value& v, const JsonDumpOptions& opt, size_t max_bytes) {
  Dumper d(opt, max_bytes);
  if (Status s = d.dump(v, 0); !s) return s.error();
  if (d.out.size() > max_bytes) {
    return make_error(ErrorCode::CapacityExceeded, fmt::format("tojson output exceeds {} bytes", max_bytes));
  }
  return std::move(d.out);
}

}  // namespace glass::tokenizer::chat
