#pragma once
// OpenAI's response objects, built from a GenerateResult: text_completion / chat.completion for
// whole replies, and the server-sent events of a streamed one (`data: {...}\n\n` per chunk, then
// `data: [DONE]\n\n`). Generated text may end inside a UTF-8 sequence (a reply cut by max_tokens
// or a cancel); such bytes are written as U+FFFD rather than failing the JSON dump.
//
// Log probabilities, when the request asked for them (ReplyMeta::logprobs_model), take OpenAI's two
// shapes: chat's `{"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}],
// "refusal": null}` and the legacy completions' `{text_offset, token_logprobs, tokens, top_logprobs:
// [{token: logprob}]}` (the N most likely and the sampled token, so up to N + 1 keys, as OpenAI
// documents). A token reads as its piece (Model::token_to_piece); a value JSON cannot hold is -9999.0,
// OpenAI's "very unlikely".
#include <cstdint>
#include <optional>
#include <span>
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
  // Set when the request asked for log probabilities: the model whose pieces the tokens read as.
  const Model* logprobs_model = nullptr;
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
  std::string text;       // chat: the content, thoughts taken out
  std::string reasoning;  // chat: the thoughts (message.reasoning_content when not empty)
  FinishReason finish = FinishReason::Stop;
  // Set when the reply parsed as tool calls: the message gets tool_calls, content the text before
  // them (null when that is blank), finish_reason "tool_calls".
  std::optional<ParsedReply> tools;
  std::vector<TokenLogprobs> logprobs;  // GenerateResult::logprobs, when the request asked
};

// The log probabilities one chunk of a stream carries: those of the tokens generated since the last
// chunk that carried any, and (completions) where the first one's text starts in the reply.
struct LogprobsChunk {
  std::span<const TokenLogprobs> entries;
  int64_t text_offset = 0;
};

// How far the tokens' texts move text_offset: their pieces' characters (code points).
int64_t logprobs_text_length(const Model& model, std::span<const TokenLogprobs> entries);

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
  // `logprobs`: the chunk's share when the request asked for them (no entries: "logprobs": null).
  std::string piece(std::string_view text, int index = 0, LogprobsChunk logprobs = {}) const;
  // Chat only: a piece of the thoughts (delta.reasoning_content).
  std::string reasoning_piece(std::string_view text, int index = 0, LogprobsChunk logprobs = {}) const;
  std::string closing(FinishReason finish, int index = 0, LogprobsChunk logprobs = {}) const;
  // Chat only: the calls as one delta (each with its index, id, name and whole arguments), then the
  // closing chunk with finish_reason "tool_calls".
  std::string tool_calls(const std::vector<ToolCall>& calls, int index = 0,
                         LogprobsChunk logprobs = {}) const;
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
