// Chat templates: parse, then render with a context from the same input (template, separator,
// context JSON in glass's context format; fuzz_input.h). The limits are tighter than the defaults
// so that one input stays well under libFuzzer's timeout; what they bound is the same.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "fuzz_input.h"
#include "tokenizer/chat/chat_template.h"

using glass::tokenizer::chat::ChatTemplate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [source, context_text] = glass::fuzz::split2(data, size);
  auto tmpl = ChatTemplate::parse(source);
  if (!tmpl.ok()) return 0;
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (!context_text.empty()) {
    if (!glass::check_json_depth(context_text, "context").ok()) return 0;
    context = nlohmann::ordered_json::parse(context_text, nullptr, /*allow_exceptions=*/false);
    if (context.is_discarded() || !context.is_object()) return 0;
  } else {
    context = nlohmann::ordered_json::parse(
        R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"}], "add_generation_prompt": true})");
  }
  const nlohmann::ordered_json defaults = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  auto vars = glass::tokenizer::chat::variables_from_context(context, defaults);
  if (!vars.ok()) return 0;
  glass::tokenizer::chat::RenderOptions options;
  options.clock = [] {
    std::tm t{};
    t.tm_year = 126;
    t.tm_mday = 1;
    return t;
  };
  options.limits.max_steps = 200'000;
  options.limits.max_string_bytes = 1u << 20;
  options.limits.max_items = 1u << 16;
  (void)tmpl->render(*vars, options);
  return 0;
}
