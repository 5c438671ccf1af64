#pragma once
// Request bodies of /v1/completions and /v1/chat/completions, parsed and validated into what the
// engine takes. Everything a client sends passes through here first: a body that is not JSON, a
// field of the wrong type or out of range comes back as a 400 ApiError naming the field, so the
// handlers only ever see well-formed requests. Fields the API defines but glass does not serve yet
// (echo, best_of, suffix, functions) are refused the same way rather than silently ignored;
// response_format / json_schema / grammar and a forced tool_choice become a Constraint
// (server/constraints.h); unknown fields are ignored, as OpenAI-compatible servers do (clients send extras).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "glass/llm.h"
#include "server/api_error.h"
#include "server/constraints.h"

namespace glass::server {

// What validation needs to know about the loaded model.
struct ModelLimits {
  int64_t vocab_size = 0;
  int64_t n_ctx = 0;  // also the most tokens a request may ask for: generation cannot pass it
};

// The fields both endpoints share.
// The most choices one request may ask for (`n`): each is a sequence of its own in the engine.
constexpr int32_t kMaxChoices = 8;
// The most alternatives per token the legacy completions' `logprobs` may ask for (OpenAI's limit;
// chat's top_logprobs goes to kMaxTopLogprobs).
constexpr int32_t kMaxCompletionLogprobs = 5;

struct GenerationFields {
  std::optional<std::string> model;  // absent: the served model
  GenerateConfig config;
  int32_t n = 1;  // choices; choice i samples with seed + i when a seed is given
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

struct CompletionRequest {
  GenerationFields fields;
  // One prompt: text (tokenized with the model's special tokens, as glass::generate does) or ids.
  std::optional<std::string> prompt_text;
  std::vector<int32_t> prompt_ids;
};

struct ChatRequest {
  GenerationFields fields;
  // Tool turns carry their tool_calls (arguments parsed into JSON objects where they are JSON, as
  // transformers' templates expect) and tool_call_id / name in ChatMessage::extra_json.
  std::vector<ChatMessage> messages;
  // `tools` as given (a JSON array), "" when absent, empty or tool_choice is "none": then the
  // template does not see them and the reply is not read for calls.
  std::string tools_json;
  ToolChoice tool_choice;  // required / named: the server constrains the reply to calls
  // chat_template_kwargs as given (a JSON object: more variables for the template, such as
  // {"enable_thinking": false}), "" when absent.
  std::string template_kwargs_json;
  // reasoning_format ("none", "auto", "deepseek"): overrides the server's --reasoning-format.
  std::optional<std::string> reasoning_format;
};

// Each returns the first problem found, or nullopt with `out` filled.
std::optional<ApiError> parse_completion_request(std::string_view body, const ModelLimits& limits,
                                                 CompletionRequest& out);
std::optional<ApiError> parse_chat_request(std::string_view body, const ModelLimits& limits,
                                           ChatRequest& out);

// POST /tokenize {"content": text, "add_special": false, "parse_special": true} (llama.cpp's defaults).
struct TokenizeRequest {
  std::string content;
  bool add_special = false;
  bool parse_special = true;
};
std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest& out);

// POST /detokenize {"tokens": [ids]}.
std::optional<ApiError> parse_detokenize_request(std::string_view body, const ModelLimits& limits,
                                                 std::vector<int32_t>& out);

}  // namespace glass::server
