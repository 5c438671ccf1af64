#pragma once
// The test table (`x is <test>`), implemented in jinja_tests.cpp.
#include <string_view>

#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

using TestFn = Result<bool> (*)(Interpreter&, const Value& operand, CallArgs& args);

// nullptr when there is no test of that name.
TestFn find_test(std::string_view name);

}  // namespace glass::tokenizer::chat
