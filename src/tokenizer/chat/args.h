#pragma once
// Binding call arguments to a Python-style signature, for builtin functions, methods, filters and
// tests. Errors are TypeErrors worded as Python words them.
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

// One slot per name, filled from positional then keyword arguments; a missing optional argument
// is left undefined. `required` leading names must be given.
Result<std::vector<Value>> bind_args(std::string_view fn, const CallArgs& args,
                                     std::initializer_list<std::string_view> names, size_t required = 0);

Error type_error(std::string message);
Error value_error(std::string message);

// Typed views of a bound argument (`what` names it in errors): a string, an int (bool counts),
// or nullopt for undefined/None with a default applied by the caller.
Result<std::string> string_arg(std::string_view fn, std::string_view what, const Value& v);
Result<std::optional<std::string>> optional_string_arg(std::string_view fn, std::string_view what,
                                                       const Value& v);
Result<int64_t> int_arg(std::string_view fn, std::string_view what, const Value& v, int64_t def);

}  // namespace glass::tokenizer::chat
