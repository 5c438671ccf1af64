#pragma once
// Reasoning in generated text. Models that think before they answer write their thoughts in the
// syntax their chat template shows them, and the server returns the thoughts apart from the answer
// (message.reasoning_content, delta.reasoning_content), as llama-server, vLLM and DeepSeek's API do:
//   think tags  <think>thoughts</think>answer (Qwen 3 / 3.5, DeepSeek-R1 distills, SmolLM3). A
//               template may open the tag itself at the end of the prompt: the reply then starts
//               inside the thoughts and only closes them.
//   harmony     gpt-oss: messages `<|channel|>analysis<|message|>thoughts<|end|>`, then
//               `<|start|>assistant<|channel|>final<|message|>answer`; commentary messages addressed
//               `to=functions.NAME` are tool calls (their JSON bodies are held, never streamed),
//               other commentary (a preamble before calls) is content.
// Reasoning format "none" (--reasoning-format none, or the request's reasoning_format) leaves the
// text as the model wrote it: tags, and for harmony the channel markers, stay in the content.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace glass::server {

enum class ReasoningFormat { None, Auto };
// "none", "auto" and "deepseek" (llama-server's name for the same split); nullopt for others.
std::optional<ReasoningFormat> reasoning_format_named(std::string_view name);

enum class ReplySyntax { Plain, ThinkTags, Harmony };
// From markers the template text contains.
ReplySyntax reply_syntax(std::string_view chat_template);

// How one reply is read back: its syntax, and whether the prompt left it inside the thoughts.
struct ReplyReading {
  ReplySyntax syntax = ReplySyntax::Plain;
  bool starts_in_reasoning = false;
};
// The reading of a reply to `prompt_text` (the rendered chat prompt) under `format`: Plain under
// None; think tags start inside the thoughts when the prompt ends with an open <think>.
ReplyReading reply_reading(ReplySyntax syntax, ReasoningFormat format, std::string_view prompt_text);

struct ReplyParts {
  std::string reasoning;
  std::string content;
};

// Splits a reply into thoughts and the rest as it is generated. feed() returns what can be sent
// now; text that may still turn out to be a marker is held back until the next piece or finish().
// The concatenation of everything returned equals split_reply()'s result for the whole text, so a
// streamed reply and an unstreamed one say the same. Whitespace next to the markers is dropped.
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(ReplyReading reading);
  ReplyParts feed(std::string_view piece);
  ReplyParts finish();
  // Harmony: the commentary messages addressed to a function, in order (complete after finish()).
  // A body that is not a JSON object is not a call: it is returned as content when its message ends.
  const std::vector<ToolCall>& calls() const { return calls_; }

 private:
  enum class State {
    Plain,        // everything is content
    BeforeThink,  // think tags: leading whitespace, then "<think>" or anything else (content)
    Thinking,     // inside the thoughts
    AfterThink,   // after </think>: content, its leading whitespace dropped
    Header,       // harmony: a message's header, up to <|message|>
    Body,         // harmony: a message's text, up to <|end|> / <|call|> / <|return|> / <|start|>
    BetweenMessages,
  };
  enum class Channel { Reasoning, Content, Call };
  enum class Opening { Taken, Undecided, Absent };
  // After leading whitespace, does the text begin with `marker`? Taken: both consumed; Undecided:
  // what came so far may still become it.
  Opening take_opening(std::string_view marker, bool at_end);
  ReplyParts run(bool at_end);
  bool think_step(ReplyParts& out, bool at_end);  // false: nothing more can be decided now
  bool harmony_step(ReplyParts& out, bool at_end);
  // Text of a part whose surrounding whitespace is dropped (thoughts, harmony messages).
  void emit_trimmed(ReplyParts& out, std::string_view text, bool reasoning);
  void end_part();
  void open_body();
  void close_body(ReplyParts& out);

  ReplyReading reading_;
  State state_;
  std::string buf_;  // text not decided yet
  // Think tags: whitespace at the end of the thoughts, sent only if more thoughts follow.
  std::string pending_space_;
  bool skip_space_ = true;  // drop whitespace at the start of the current part
  // Harmony: the current message.
  std::string header_;
  Channel channel_ = Channel::Content;
  std::string call_body_;
  std::vector<ToolCall> calls_;
};

// The whole reply at once (what the splitter's pieces add up to), and harmony's calls.
struct SplitReply {
  ReplyParts parts;
  std::vector<ToolCall> calls;
};
SplitReply split_reply(ReplyReading reading, std::string_view text);

}  // namespace glass::server
