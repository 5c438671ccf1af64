#pragma once
// OpenAI's response objects, built from a GenerateResult: text_completion / chat.completion for
// whole replies, and the server-sent events of a streamed one (`data: {...}\n\n` per chunk, then
// `data: [DONE]\n\n`). Generated text may end inside a UTF-8 sequence (a reply cut by max_tokens
// or a cancel); such bytes are written as U+FFFD rather than failing the JSON dump.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/llm.h"
#include "server/tool_calls.h"

namespace glass::server {

enum class Endpoint { Completion, Chat };

// What every object of one reply repeats.
struct ReplyMeta {
  Endpoint endpoint = Endpoint::Completion;
  std::string id;  // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;
  std::string model;
};

// A fresh reply id with the endpoint's prefix.
std::string new_reply_id(Endpoint endpoint);

// "stop" or "length" (a cancelled request is never answered).
const char* openai_finish_reason(FinishReason r);

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
};

// One choice of a finished reply.
struct ChoiceReply {
  std::string text;
  FinishReason finish = FinishReason::Stop;
  // Set when the reply parsed as tool calls: the message gets tool_calls, content the text before
  // them (null when that is blank), finish_reason "tool_calls".
  std::optional<ParsedReply> tools;
};

// The whole reply of a request that was not streamed.
std::string reply_body(const ReplyMeta& meta, const std::vector<ChoiceReply>& choices, const Usage& usage);
std::string reply_body(const ReplyMeta& meta, const std::string& text, FinishReason finish,
                       const Usage& usage);

// A fresh tool-call id, "call_" and 24 random alphanumerics.
std::string new_tool_call_id();

// The events of a streamed reply, in order: opening() (chat: delta.role "assistant"), piece() per
// piece of text, closing() with the finish reason, usage() when the client asked for it
// (stream_options.include_usage: then every earlier chunk carries "usage": null, as OpenAI's do), done().
// With n > 1 choices each chunk names its choice's `index`, and their chunks interleave.
class StreamEvents {
 public:
  StreamEvents(ReplyMeta meta, bool include_usage) : meta_(std::move(meta)), include_usage_(include_usage) {}
  std::string opening(int index = 0) const;  // "" for completions, which have no role chunk
  std::string piece(std::string_view text, int index = 0) const;
  std::string closing(FinishReason finish, int index = 0) const;
  // Chat only: the calls as one delta (each with its index, id, name and whole arguments), then the
  // closing chunk with finish_reason "tool_calls".
  std::string tool_calls(const std::vector<ToolCall>& calls, int index = 0) const;
  std::string usage(const Usage& usage) const;
  bool include_usage() const { return include_usage_; }
  static std::string done() { return "data: [DONE]\n\n"; }
  // An error after the stream began (the status line is sent already): one event holding the error object.
  static std::string error(const std::string& error_body) { return "data: " + error_body + "\n\n"; }

 private:
  ReplyMeta meta_;
  bool include_usage_;
};

}  // namespace glass::server
