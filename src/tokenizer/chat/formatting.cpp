// String formatting: printf-style `fmt % args` (operators.h) and str.format (methods.h), covering
// the common conversions with Python's output. A conversion outside that set is an Unsupported
// error naming it, never a silent approximation.
#include "tokenizer/chat/formatting.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

#include "tokenizer/chat/operators.h"
#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

Error type_error(std::string m) { return make_error(ErrorCode::InvalidArgument, "TypeError: " + m); }
Error value_error(std::string m) { return make_error(ErrorCode::InvalidArgument, "ValueError: " + m); }
Error unsupported(std::string m) { return make_error(ErrorCode::Unsupported, "unsupported: " + m); }

std::string pad(const std::string& s, size_t width, char align, char32_t fill) {
  const size_t len = codepoint_count(s);
  if (len >= width) return s;
  const size_t total = width - len;
  std::string f;
  append_utf8(f, fill);
  auto rep = [&](size_t n) {
    std::string r;
    for (size_t i = 0; i < n; ++i) r += f;
    return r;
  };
  if (align == '<') return s + rep(total);
  if (align == '^') return rep(total / 2) + s + rep(total - total / 2);
  return rep(total) + s;
}

// A number through C printf with the given flags/width/precision and conversion.
Result<std::string> format_number(const Value& v, const std::string& flags, int width, int precision,
                                  char conv) {
  if (!v.is_number()) {
    return type_error(fmt::format("%{} format: a real number is required, not {}", conv, v.type_name()));
  }
  std::string spec = "%";
  spec += flags;
  if (width >= 0) spec += std::to_string(width);
  char buf[512];
  if (conv == 'd' || conv == 'i' || conv == 'x' || conv == 'X' || conv == 'o') {
    const auto i = as_integer(v);
    if (!i) return value_error("cannot convert float NaN or infinity to integer");
    spec += "ll";
    spec.push_back(conv == 'i' ? 'd' : conv);
    if (*i < 0 && conv != 'd' && conv != 'i') {  // Python prints -0x1f, not two's complement
      std::string pos_spec = spec;
      std::snprintf(buf, sizeof buf, pos_spec.c_str(), static_cast<long long>(-*i));
      std::string negative(1, '-');  // append, not operator+: GCC 12 -O3 -Wrestrict false positive
      negative.append(buf);
      return negative;
    }
    std::snprintf(buf, sizeof buf, spec.c_str(), static_cast<long long>(*i));
    return std::string(buf);
  }
  spec.push_back('.');
  spec += std::to_string(precision < 0 ? 6 : std::min(precision, 100));
  spec.push_back(conv);
  std::snprintf(buf, sizeof buf, spec.c_str(), v.to_double());
  return std::string(buf);
}

}  // namespace

Result<Value> percent_format(Interpreter& in, const std::string& f, const Value& args) {
  std::vector<Value> pos;
  const DictData* mapping = args.is_dict() ? &args.dict() : nullptr;
  if (args.is_list() && args.list().tuple) {
    pos = args.list().items;
  } else {
    pos.push_back(args);
  }
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (++i >= f.size()) return value_error("incomplete format");
    const Value* arg = nullptr;
    if (f[i] == '(') {
      const size_t close = f.find(')', i);
      if (close == std::string::npos) return value_error("incomplete format key");
      if (!mapping) return type_error("format requires a mapping");
      arg = mapping->find(std::string_view(f).substr(i + 1, close - i - 1));
      if (!arg) return make_error(ErrorCode::InvalidArgument, "KeyError: " + f.substr(i + 1, close - i - 1));
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < f.size() && std::string_view("-+ #0").find(f[i]) != std::string_view::npos)
      flags.push_back(f[i++]);
    int width = -1, precision = -1;
    auto number = [&](int& target) {
      if (i < f.size() && f[i] == '*') {
        ++i;
        if (next >= pos.size() || !pos[next].is_int()) return false;
        target = static_cast<int>(std::min<int64_t>(pos[next++].as_int(), 4096));
        return true;
      }
      while (i < f.size() && f[i] >= '0' && f[i] <= '9') target = std::max(target, 0) * 10 + (f[i++] - '0');
      target = std::min(target, 4096);
      return true;
    };
    if (!number(width)) return type_error("* wants int");
    if (i < f.size() && f[i] == '.') {
      ++i;
      precision = 0;
      if (!number(precision)) return type_error("* wants int");
    }
    if (i >= f.size()) return value_error("incomplete format");
    const char conv = f[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!arg) {
      if (next >= pos.size()) return type_error("not enough arguments for format string");
      arg = &pos[next++];
    }
    std::string piece;
    if (conv == 's' || conv == 'r' || conv == 'a') {
      piece = conv == 's' ? to_py_str(*arg) : to_py_repr(*arg);
      if (precision >= 0) piece = encode_utf8(decode_utf8(piece).substr(0, static_cast<size_t>(precision)));
      if (width > 0)
        piece = pad(piece, static_cast<size_t>(width), flags.find('-') != std::string::npos ? '<' : '>', ' ');
    } else if (std::string_view("diouxXeEfFgG").find(conv) != std::string_view::npos) {
      auto num = format_number(*arg, flags, width, precision, conv == 'u' ? 'd' : conv);
      if (!num) return num.error();
      piece = std::move(*num);
    } else {
      return unsupported(fmt::format("'%{}' conversion in a % format", conv));
    }
    out += piece;
    if (Status s = in.check_string(out.size()); !s) return s.error();
  }
  if (!used_mapping && !mapping && next < pos.size()) {
    return type_error("not all arguments converted during string formatting");
  }
  return Value(std::move(out));
}

Result<std::string> format_spec(const Value& v, std::string_view spec) {
  // [[fill]align][sign][#][0][width][,][.precision][type]
  char32_t fill = ' ';
  char align = '\0';
  size_t i = 0;
  const std::u32string u = decode_utf8(spec);
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (u.size() >= 2 && is_align(u[1])) {
    fill = u[0];
    align = static_cast<char>(u[1]);
    i = 2;
  } else if (!u.empty() && is_align(u[0])) {
    align = static_cast<char>(u[0]);
    i = 1;
  }
  std::string rest = encode_utf8(std::u32string_view(u).substr(i));
  std::string flags;
  size_t k = 0;
  if (k < rest.size() && (rest[k] == '+' || rest[k] == '-' || rest[k] == ' ')) {
    if (rest[k] != '-') flags.push_back(rest[k]);
    ++k;
  }
  if (k < rest.size() && rest[k] == '0') {
    if (!align) {
      fill = '0';
      align = '=';
    }
    ++k;
  }
  int width = -1, precision = -1;
  while (k < rest.size() && rest[k] >= '0' && rest[k] <= '9')
    width = std::max(width, 0) * 10 + (rest[k++] - '0');
  if (k < rest.size() && rest[k] == '.') {
    ++k;
    precision = 0;
    while (k < rest.size() && rest[k] >= '0' && rest[k] <= '9')
      precision = precision * 10 + (rest[k++] - '0');
  }
  width = std::min(width, 4096);
  const char type = k < rest.size() ? rest[k++] : '\0';
  if (k != rest.size()) return unsupported(fmt::format("format spec '{}'", spec));
  std::string body;
  if (type == '\0' && !v.is_number()) {
    body = to_py_str(v);
    if (precision >= 0) body = encode_utf8(decode_utf8(body).substr(0, static_cast<size_t>(precision)));
  } else if (type == 's') {
    if (!v.is_string())
      return value_error(fmt::format("Unknown format code 's' for object of type '{}'", v.type_name()));
    body = v.str();
    if (precision >= 0) body = encode_utf8(decode_utf8(body).substr(0, static_cast<size_t>(precision)));
  } else if (type == '\0' && (v.is_int() || v.is_bool()) && precision < 0) {
    body = v.is_bool() ? to_py_str(v) : std::to_string(v.as_int());
    if (!flags.empty() && v.is_int() && v.as_int() >= 0) body = flags + body;
  } else if (type == '\0' && v.is_float() && precision < 0) {
    body = py_float_repr(v.as_float());
    if (!flags.empty() && v.as_float() >= 0) body = flags + body;
  } else if (std::string_view("dxXofFeEgG%").find(type) != std::string_view::npos && type != '\0') {
    if (type == '%') {
      auto num = format_number(Value(v.to_double() * 100), flags, -1, precision, 'f');
      if (!num) return num.error();
      body = *num + "%";
    } else {
      if ((type == 'd' || type == 'x' || type == 'X' || type == 'o') && v.is_float()) {
        return value_error(fmt::format("Unknown format code '{}' for object of type 'float'", type));
      }
      auto num = format_number(v, flags, -1, precision, type);
      if (!num) return num.error();
      body = std::move(*num);
    }
  } else {
    return unsupported(fmt::format("format spec '{}'", spec));
  }
  if (width < 0) return body;
  if (align == '=') {
    size_t sign = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    return body.substr(0, sign) +
           pad(body.substr(sign),
               static_cast<size_t>(width) - std::min<size_t>(sign, static_cast<size_t>(width)), '>', fill);
  }
  if (!align) align = v.is_number() ? '>' : '<';
  return pad(body, static_cast<size_t>(width), align, fill);
}

Result<Value> str_format(Interpreter& in, const std::string& f, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return value_error("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = f.find('}', i);
    if (close == std::string::npos) return value_error("Single '{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    i = close;
    std::string spec, conv;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
    }
    // The first part names the argument; then .attr / [key] parts.
    size_t end = field.find_first_of(".[");
    const std::string head = field.substr(0, end);
    Value v;
    if (head.empty()) {
      if (auto_index >= args.pos.size()) {
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("IndexError: Replacement index {} out of range", auto_index));
      }
      v = args.pos[auto_index++];
    } else if (head.find_first_not_of("0123456789") == std::string::npos) {
      const size_t idx = std::stoul(head.substr(0, 9));
      if (idx >= args.pos.size()) {
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("IndexError: Replacement index {} out of range", idx));
      }
      v = args.pos[idx];
    } else {
      bool found = false;
      for (const auto& [name, val] : args.kw) {
        if (name == head) {
          v = val;
          found = true;
        }
      }
      if (!found) return make_error(ErrorCode::InvalidArgument, fmt::format("KeyError: '{}'", head));
    }
    while (end != std::string::npos && end < field.size()) {
      if (field[end] == '.') {
        const size_t next = field.find_first_of(".[", end + 1);
        auto a = in.get_attr(
            v, field.substr(end + 1, next == std::string::npos ? std::string::npos : next - end - 1));
        if (!a) return a;
        v = std::move(*a);
        end = next;
      } else {
        const size_t rb = field.find(']', end);
        if (rb == std::string::npos) return value_error("Missing ']' in format string");
        const std::string key = field.substr(end + 1, rb - end - 1);
        const bool numeric = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        auto it =
            in.get_item(v, numeric ? Value(static_cast<int64_t>(std::stoll(key.substr(0, 18)))) : Value(key));
        if (!it) return it;
        v = std::move(*it);
        end = rb + 1;
      }
    }
    if (conv == "r" || conv == "a") {
      v = Value(to_py_repr(v));
    } else if (conv == "s") {
      v = Value(to_py_str(v));
    } else if (!conv.empty()) {
      return value_error(fmt::format("Unknown conversion specifier {}", conv));
    }
    auto piece = format_spec(v, spec);
    if (!piece) return piece.error();
    out += *piece;
    if (Status s = in.check_string(out.size()); !s) return s.error();
  }
  return Value(std::move(out));
}

}  // namespace glass::tokenizer::chat
