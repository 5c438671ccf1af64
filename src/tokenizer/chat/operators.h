#pragma once
// Python's operators on template values: arithmetic (int64 with overflow checks, true division,
// floor division and modulo with Python's signs), concatenation and repetition of str/list/tuple,
// `in`, slicing with negative steps, and `str % args`. Errors carry Python's exception type and
// wording ("TypeError: can only concatenate str (not \"NoneType\") to str").
#include <optional>
#include <string_view>

#include "glass/result.h"
#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

// op: "+", "-", "*", "/", "//", "%", "**".
Result<Value> binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b);
Result<Value> negate(const Value& v, bool minus);
// Python `item in container`.
Result<bool> contains(const Value& container, const Value& item);
// obj[start:stop:step] for str, list and tuple; anything else gives undefined, as in Jinja.
Result<Value> slice_value(const Value& obj, const Value& start, const Value& stop, const Value& step);
// obj[index] for str, list and tuple with Python's negative indices; out of range gives undefined.
Value index_value(const Value& obj, int64_t index);
// printf-style `fmt % args` (%s %r %d %i %f %x %o %e %%, flags, width, precision, %(name)s).
Result<Value> percent_format(Interpreter& in, const std::string& fmt, const Value& args);
// int(v) for bool, int, float; nullopt for other kinds.
std::optional<int64_t> as_integer(const Value& v);

}  // namespace glass::tokenizer::chat
