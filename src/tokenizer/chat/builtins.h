#pragma once
// Global functions every template sees: Jinja's range, dict, namespace, joiner and cycler, and
// transformers' raise_exception(message) and strftime_now(format).
#include "tokenizer/chat/interpreter.h"

namespace glass::tokenizer::chat {

// Jinja's sandbox refuses larger ranges (MAX_RANGE).
inline constexpr int64_t kMaxRange = 100000;

void add_builtins(Scope& globals);

}  // namespace glass::tokenizer::chat
