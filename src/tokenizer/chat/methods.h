#pragma once
// Python methods of str, list and dict values, bound on attribute access (`s.strip`,
// `d.items`), as Jinja exposes them. Mutating methods (list.append, dict.update, ...) are refused
// as transformers' ImmutableSandboxedEnvironment refuses them: the attribute is an undefined value
// whose use raises "SecurityError: access to attribute 'append' of 'list' object is unsafe.".
#include <optional>
#include <string>

#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

// The bound method `name` of `obj`, or nullopt when `obj` has no such method.
std::optional<Value> find_method(const Value& obj, const std::string& name);

}  // namespace glass::tokenizer::chat
