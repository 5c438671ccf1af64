#pragma once
// Chat templates: the Jinja subset that real models' chat templates use, rendered byte for byte as
// Hugging Face transformers renders them (Jinja2's ImmutableSandboxedEnvironment with trim_blocks,
// lstrip_blocks, loopcontrols, {% generation %}, a `tojson` that does not escape HTML, and the
// globals raise_exception and strftime_now).
//
//   auto t = ChatTemplate::parse(source);            // syntax checked, every filter/test known
//   auto text = t->render(variables, options);       // variables: messages, tools, bos_token, ...
//
// Errors name the construct and "line:column": "chat template:12:9: TemplateError: <message of
// raise_exception>", "chat template:3:14: unsupported: filter 'pprint'", "chat template:7:20:
// TypeError: can only concatenate str (not \"NoneType\") to str". Rendering is bounded: a step
// budget, a call-depth limit and size limits turn endless loops, runaway recursion and exploding
// strings into CapacityExceeded errors.
#include <ctime>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "glass/result.h"
#include "tokenizer/chat/interpreter.h"

namespace glass::tokenizer::chat {

struct RenderOptions {
  // What strftime_now() reads, as local time; empty: the system clock.
  std::function<std::tm()> clock;
  RenderLimits limits;
};

class ChatTemplate {
 public:
  // Errors: InvalidArgument (syntax, unknown filter or test), Unsupported (a Jinja feature this
  // engine does not implement), CapacityExceeded (nesting or size beyond the parser's bounds).
  static Result<ChatTemplate> parse(std::string_view source);

  // `variables` is a JSON object; each member becomes a template variable (messages, tools,
  // add_generation_prompt, bos_token, eos_token, ...). Object member order is kept, as Python
  // dicts keep it, so `tojson` and `dict.items()` see the caller's order.
  Result<std::string> render(const nlohmann::ordered_json& variables,
                             const RenderOptions& options = {}) const;

 private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The template variables for one conversation in glass's context format (the fixtures'
// contexts.json entries and `glass chat-template --context`): `messages`, `tools` (null when
// absent), `documents` = null, `add_generation_prompt` (false when absent), then `defaults`
// (e.g. bos_token/eos_token from the model), then the context's `extra` object, which wins.
Result<nlohmann::ordered_json> variables_from_context(const nlohmann::ordered_json& context,
                                                      const nlohmann::ordered_json& defaults);

// "2026-01-01T00:00:00" (or with a space, or a date alone) -> a broken-down time for a fixed clock.
Result<std::tm> parse_datetime(std::string_view text);

}  // namespace glass::tokenizer::chat
