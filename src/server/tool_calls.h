#pragma once
// Tool calls in generated text. Models trained for tools write their calls in the syntax their chat
// template shows them, so the template text decides how a reply is read back:
//   Hermes / Qwen   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>  (one block per call)
//   Llama 3.x       {"name": ..., "parameters": {...}} as the whole reply, after an optional <|python_tag|>
//   Mistral         [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]  (or, Small 3.2,
//                   [TOOL_CALLS]name[ARGS]{...} per call)
//   Qwen XML        Qwen3-Coder, Qwen 3.5:
//   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n
//                   </function>\n</tool_call> (values typed by the tool's schema: a string parameter's
//                   value is its text, others JSON where they parse)
//   Harmony         gpt-oss: <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{...}
//                   (read by the reasoning splitter, server/reasoning.h, which knows harmony's messages)
// A reply that does not parse as the family's calls is plain text: a model may write a marker in
// prose, or be cut off by max_tokens inside a call, and either is the client's to read, not an error.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::server {

enum class ToolFamily { None, Hermes, QwenXml, Llama3, Mistral, Harmony };

// From markers the template text contains; None when it shows no tool-call syntax glass knows.
ToolFamily tool_family(std::string_view chat_template);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, serialized (OpenAI sends arguments as a string)
};

struct ParsedReply {
  std::string content;  // the text before the calls (may be empty)
  std::vector<ToolCall> calls;
};

// The calls in `text`, or nullopt when it holds none that parse (then it is all content). Harmony:
// always nullopt here (ReasoningSplitter::calls).
// `tools_json`: the request's tools (Qwen XML reads their parameter types).
std::optional<ParsedReply> parse_tool_calls(ToolFamily family, std::string_view text,
                                            std::string_view tools_json = {});

// The length of the longest end of `s` that is the start (not the whole) of `marker`: text a
// streaming reader holds back because it may yet become the marker.
size_t partial_marker(std::string_view s, std::string_view marker);

// For streaming: passes text through until it may begin a tool call, then holds the rest back, so
// that a reply that turns out to be calls is never streamed as content. What was passed is always
// the content parse_tool_calls finds before the calls.
class ToolCallFilter {
 public:
  explicit ToolCallFilter(ToolFamily family) : family_(family) {}
  // The part of `piece` (with what was held) that can be streamed as content now.
  std::string feed(std::string_view piece);
  // Everything held back (for a reply that did not parse as calls after all).
  std::string held() const { return held_; }

 private:
  ToolFamily family_;
  bool holding_ = false;      // a marker was seen: hold everything from it on
  bool passed_text_ = false;  // Llama 3: calls only count as the whole reply
  std::string held_;
};

}  // namespace glass::server
