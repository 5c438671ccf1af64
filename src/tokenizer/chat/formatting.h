#pragma once
// Python's str.format and format-spec mini-language (the subset: fill, align, sign, zero padding,
// width, precision, types s d x X o f F e E g G %). percent_format is declared in operators.h.
#include <string>
#include <string_view>

#include "glass/result.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

Result<std::string> format_spec(const Value& v, std::string_view spec);
Result<Value> str_format(Interpreter& in, const std::string& fmt, const CallArgs& args);

}  // namespace glass::tokenizer::chat
