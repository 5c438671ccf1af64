// glass serve's request bodies, without the network: the first byte picks the endpoint, the rest is
// the body (its size bounded as the server's max_body_bytes bounds it).
//   0 /v1/chat/completions   parse_chat_request, then tool_call_constraint for every tool family
//   1 /v1/completions        parse_completion_request
//   2 /tokenize              parse_tokenize_request
//   3 /detokenize            parse_detokenize_request
//   4 a model's reply        parse_tool_calls and ToolCallFilter (streamed in pieces) per family, and
//                            the reasoning splitter per syntax (pieces add up to the whole split)
// response_format / json_schema / grammar and forced tool calls compile to constraints
// (server/constraints.cpp); one that compiles is matched as the gbnf harness does, driven by the
// body's bytes (grammar_driver.h). Only the server's parsing sources are linked (fuzz/CMakeLists.txt):
// no HTTP library, no model (the limits are stories260K's).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "grammar_driver.h"
#include "server/constraints.h"
#include "server/openai_request.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace {

using namespace glass::server;

constexpr ModelLimits kLimits{.vocab_size = 512, .n_ctx = 512};
constexpr ToolFamily kFamilies[] = {ToolFamily::None,   ToolFamily::Hermes,  ToolFamily::QwenXml,
                                    ToolFamily::Llama3, ToolFamily::Mistral, ToolFamily::Harmony};
constexpr std::string_view kTools =
    R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string"}}}}}])";

void exercise(const std::shared_ptr<const glass::Constraint>& c, std::string_view body) {
  if (c) glass::fuzz::exercise_constraint(*c, body.substr(0, 256), body.substr(body.size() / 2));
}

void chat(std::string_view body) {
  ChatRequest r;
  if (parse_chat_request(body, kLimits, r)) return;
  exercise(r.fields.config.constraint, body);
  for (const ToolFamily f : kFamilies) {
    std::shared_ptr<const glass::Constraint> c;
    if (tool_call_constraint(f, r.tools_json, r.tool_choice, c)) continue;
    exercise(c, body);
  }
}

// The same split whether the reply comes whole or in pieces of 1 to 7 bytes.
void split(ReplyReading reading, std::string_view text) {
  const SplitReply whole = split_reply(reading, text);
  ReasoningSplitter s(reading);
  std::string reasoning, content;
  for (size_t at = 0; at < text.size();) {
    const size_t n = 1 + static_cast<uint8_t>(text[at]) % 7;
    const ReplyParts p = s.feed(text.substr(at, n));
    reasoning += p.reasoning;
    content += p.content;
    at += n;
  }
  const ReplyParts last = s.finish();
  reasoning += last.reasoning;
  content += last.content;
  if (reasoning != whole.parts.reasoning || content != whole.parts.content) __builtin_trap();
  if (s.calls().size() != whole.calls.size()) __builtin_trap();
  for (size_t i = 0; i < whole.calls.size(); ++i)
    if (s.calls()[i].name != whole.calls[i].name || s.calls()[i].arguments != whole.calls[i].arguments)
      __builtin_trap();
}

void reply(std::string_view text) {
  for (const ReplyReading r : {ReplyReading{}, ReplyReading{.syntax = ReplySyntax::ThinkTags},
                               ReplyReading{.syntax = ReplySyntax::ThinkTags, .starts_in_reasoning = true},
                               ReplyReading{.syntax = ReplySyntax::Harmony}})
    split(r, text);
  for (const ToolFamily f : kFamilies) {
    (void)parse_tool_calls(f, text, kTools);
    ToolCallFilter filter(f);
    std::string passed;
    for (size_t at = 0; at < text.size();) {
      const size_t n = 1 + static_cast<uint8_t>(text[at]) % 7;
      passed += filter.feed(text.substr(at, n));
      at += n;
    }
    passed += filter.held();
    if (passed != text) __builtin_trap();  // nothing is lost or made up between pieces
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      chat(body);
      break;
    case 1: {
      CompletionRequest r;
      if (!parse_completion_request(body, kLimits, r)) exercise(r.fields.config.constraint, body);
      break;
    }
    case 2: {
      TokenizeRequest r;
      (void)parse_tokenize_request(body, r);
      break;
    }
    case 3: {
      std::vector<int32_t> ids;
      (void)parse_detokenize_request(body, kLimits, ids);
      break;
    }
    default:
      reply(body);
      break;
  }
  return 0;
}
