#include "tokenizer/chat/args.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/chat/operators.h"

namespace glass::tokenizer::chat {

Error type_error(std::string message) {
  return make_error(ErrorCode::InvalidArgument, "TypeError: " + message);
}
Error value_error(std::string message) {
  return make_error(ErrorCode::InvalidArgument, "ValueError: " + message);
}

Result<std::vector<Value>> bind_args(std::string_view fn, const CallArgs& args,
                                     std::initializer_list<std::string_view> names, size_t required) {
  std::vector<Value> out(names.size());
  std::vector<bool> given(names.size(), false);
  if (args.pos.size() > names.size()) {
    return type_error(fmt::format("{}() takes at most {} argument{} ({} given)", fn, names.size(),
                                  names.size() == 1 ? "" : "s", args.pos.size()));
  }
  for (size_t i = 0; i < args.pos.size(); ++i) {
    out[i] = args.pos[i];
    given[i] = true;
  }
  for (const auto& [name, value] : args.kw) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      return type_error(fmt::format("{}() got an unexpected keyword argument '{}'", fn, name));
    const auto i = static_cast<size_t>(it - names.begin());
    if (given[i]) return type_error(fmt::format("{}() got multiple values for argument '{}'", fn, name));
    out[i] = value;
    given[i] = true;
  }
  for (size_t i = 0; i < required; ++i) {
    if (!given[i])
      return type_error(fmt::format("{}() missing required argument '{}'", fn, *(names.begin() + i)));
  }
  return out;
}

Result<std::string> string_arg(std::string_view fn, std::string_view what, const Value& v) {
  if (v.is_string()) return v.str();
  if (v.is_undefined()) return undefined_error(v);
  return type_error(fmt::format("{}() argument '{}' must be str, not {}", fn, what, v.type_name()));
}

Result<std::optional<std::string>> optional_string_arg(std::string_view fn, std::string_view what,
                                                       const Value& v) {
  if (v.is_undefined() || v.is_none()) return std::optional<std::string>();
  auto s = string_arg(fn, what, v);
  if (!s) return s.error();
  return std::optional<std::string>(std::move(*s));
}

Result<int64_t> int_arg(std::string_view fn, std::string_view what, const Value& v, int64_t def) {
  if (v.is_undefined() || v.is_none()) return def;
  if (v.is_int() || v.is_bool()) return *as_integer(v);
  return type_error(fmt::format("{}() argument '{}' must be int, not {}", fn, what, v.type_name()));
}

}  // namespace glass::tokenizer::chat
