#include "server/openai_response.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <random>

namespace glass::server {
namespace {

using Json = nlohmann::ordered_json;  // fields in the order OpenAI writes them

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

Json envelope(const ReplyMeta& m, bool chunk) {
  const bool chat = m.endpoint == Endpoint::Chat;
  return {{"id", m.id},
          {"object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", m.created},
          {"model", m.model}};
}

Json finish_json(const char* finish) { return finish ? Json(finish) : Json(nullptr); }

// A float32 log-probability as the shortest decimal that reads back as the same float (-0.3172531,
// not the double -0.31725308299064636), or -9999.0 where JSON has no number for it.
Json logprob_json(float lp) {
  if (!std::isfinite(lp)) return -9999.0;
  return std::strtod(fmt::format("{}", lp).c_str(), nullptr);
}

int64_t characters(std::string_view s) {
  int64_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  return n;
}

Json chat_token_json(const Model& m, const TokenLogprob& t) {
  const std::string piece = m.token_to_piece(t.id);
  Json bytes = Json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return {{"token", piece}, {"logprob", logprob_json(t.logprob)}, {"bytes", std::move(bytes)}};
}

Json chat_logprobs_json(const Model& m, std::span<const TokenLogprobs> entries) {
  Json content = Json::array();
  for (const TokenLogprobs& e : entries) {
    Json j = chat_token_json(m, e.token);
    Json top = Json::array();
    for (const TokenLogprob& t : e.top) top.push_back(chat_token_json(m, t));
    j["top_logprobs"] = std::move(top);
    content.push_back(std::move(j));
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

Json completion_logprobs_json(const Model& m, std::span<const TokenLogprobs> entries, int64_t offset) {
  Json offsets = Json::array(), values = Json::array(), tokens = Json::array(), tops = Json::array();
  for (const TokenLogprobs& e : entries) {
    const std::string piece = m.token_to_piece(e.token.id);
    // Tokens whose pieces read the same share a key: the more likely one's value stays.
    Json top = Json::object();
    for (const TokenLogprob& t : e.top) top.emplace(m.token_to_piece(t.id), logprob_json(t.logprob));
    top.emplace(piece, logprob_json(e.token.logprob));
    offsets.push_back(offset);
    values.push_back(logprob_json(e.token.logprob));
    tokens.push_back(piece);
    tops.push_back(std::move(top));
    offset += characters(piece);
  }
  return {{"text_offset", std::move(offsets)},
          {"token_logprobs", std::move(values)},
          {"tokens", std::move(tokens)},
          {"top_logprobs", std::move(tops)}};
}

// The choice's "logprobs": null unless the request asked and the chunk has tokens.
Json logprobs_json(const ReplyMeta& meta, LogprobsChunk lp) {
  if (!meta.logprobs_model || lp.entries.empty()) return nullptr;
  if (meta.endpoint == Endpoint::Chat) return chat_logprobs_json(*meta.logprobs_model, lp.entries);
  return completion_logprobs_json(*meta.logprobs_model, lp.entries, lp.text_offset);
}

}  // namespace

int64_t logprobs_text_length(const Model& model, std::span<const TokenLogprobs> entries) {
  int64_t n = 0;
  for (const TokenLogprobs& e : entries) n += characters(model.token_to_piece(e.token.id));
  return n;
}

std::string new_reply_id(Endpoint endpoint) {
  // Unique within the process (the counter) and across restarts (the random base).
  static const uint64_t base = [] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);
  return fmt::format("{}-{:016x}{:08x}", endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl", base, n);
}

const char* openai_finish_reason(FinishReason r) { return r == FinishReason::Length ? "length" : "stop"; }

std::string new_tool_call_id() {
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    return std::mt19937_64((uint64_t{rd()} << 32) ^ rd());
  }();
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kChars[rng() % kChars.size()];
  return id;
}

namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

Json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  Json out = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    Json c = Json::object();
    if (with_index) c["index"] = k;
    c["id"] = new_tool_call_id();
    c["type"] = "function";
    c["function"] = {{"name", calls[k].name}, {"arguments", calls[k].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string reply_body(const ReplyMeta& meta, const std::vector<ChoiceReply>& choices, const Usage& usage) {
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceReply& c = choices[i];
    Json choice = {{"index", i}};
    const char* finish = openai_finish_reason(c.finish);
    if (meta.endpoint == Endpoint::Chat && c.tools) {
      const std::string& content = c.tools->content;
      choice["message"] = {{"role", "assistant"},
                           {"content", blank(content) ? Json(nullptr) : Json(content)},
                           {"tool_calls", tool_calls_json(c.tools->calls, /*with_index=*/false)}};
      finish = "tool_calls";
    } else if (meta.endpoint == Endpoint::Chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    }
    if (meta.endpoint == Endpoint::Chat && !c.reasoning.empty()) {
      choice["message"]["reasoning_content"] = c.reasoning;
    } else if (meta.endpoint != Endpoint::Chat) {
      choice["text"] = c.text;
    }
    // A reply that asked gets its logprobs object even with no tokens (content []), as OpenAI's.
    choice["logprobs"] = nullptr;
    if (meta.logprobs_model)
      choice["logprobs"] = meta.endpoint == Endpoint::Chat
                               ? chat_logprobs_json(*meta.logprobs_model, c.logprobs)
                               : completion_logprobs_json(*meta.logprobs_model, c.logprobs, 0);
    choice["finish_reason"] = finish;
    list.push_back(std::move(choice));
  }
  Json j = envelope(meta, /*chunk=*/false);
  j["choices"] = std::move(list);
  j["usage"] = usage_json(usage);
  return dump(j);
}

std::string reply_body(const ReplyMeta& meta, const std::string& text, FinishReason finish,
                       const Usage& usage) {
  return reply_body(meta, std::vector<ChoiceReply>{ChoiceReply{.text = text, .finish = finish}}, usage);
}

namespace {

std::string event(const Json& j) { return "data: " + dump(j) + "\n\n"; }

Json chunk(const ReplyMeta& m, bool include_usage, Json delta_or_text, const char* finish, int index,
           LogprobsChunk logprobs = {}) {
  Json choice = {{"index", index}};
  if (m.endpoint == Endpoint::Chat) {
    choice["delta"] = std::move(delta_or_text);
  } else {
    choice["text"] = std::move(delta_or_text);
  }
  choice["logprobs"] = logprobs_json(m, logprobs);
  choice["finish_reason"] = finish_json(finish);
  Json j = envelope(m, /*chunk=*/true);
  j["choices"] = Json::array({std::move(choice)});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

}  // namespace

std::string StreamEvents::opening(int index) const {
  if (meta_.endpoint != Endpoint::Chat) return {};
  return event(chunk(meta_, include_usage_, Json{{"role", "assistant"}, {"content", ""}}, nullptr, index));
}

std::string StreamEvents::piece(std::string_view text, int index, LogprobsChunk logprobs) const {
  const std::string t(text);
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json{{"content", t}} : Json(t),
                     nullptr, index, logprobs));
}

std::string StreamEvents::reasoning_piece(std::string_view text, int index, LogprobsChunk logprobs) const {
  return event(
      chunk(meta_, include_usage_, Json{{"reasoning_content", std::string(text)}}, nullptr, index, logprobs));
}

std::string StreamEvents::closing(FinishReason finish, int index, LogprobsChunk logprobs) const {
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json::object() : Json(""),
                     openai_finish_reason(finish), index, logprobs));
}

std::string StreamEvents::tool_calls(const std::vector<ToolCall>& calls, int index,
                                     LogprobsChunk logprobs) const {
  return event(chunk(meta_, include_usage_, Json{{"tool_calls", tool_calls_json(calls, /*with_index=*/true)}},
                     nullptr, index, logprobs)) +
         event(chunk(meta_, include_usage_, Json::object(), "tool_calls", index));
}

std::string StreamEvents::usage(const Usage& u) const {
  Json j = envelope(meta_, /*chunk=*/true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(u);
  return event(j);
}

}  // namespace glass::server
