#pragma once
// The filter table (filters.cpp: strings and numbers; filters_seq.cpp: sequences and mappings).
#include <string_view>

#include "tokenizer/chat/interpreter.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

using FilterFn = Result<Value> (*)(Interpreter&, const Value& operand, CallArgs& args);

// nullptr when this engine has no filter of that name.
FilterFn find_filter(std::string_view name);
FilterFn find_sequence_filter(std::string_view name);
// A Jinja builtin filter this engine deliberately does not implement (pprint, random, ...).
bool is_unsupported_filter(std::string_view name);

}  // namespace glass::tokenizer::chat
