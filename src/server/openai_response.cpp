#include "server/openai_response.h"

#include <fmt/format.h>

#include <atomic>
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

}  // namespace

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
    } else {
      choice["text"] = c.text;
    }
    choice["logprobs"] = nullptr;
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

Json chunk(const ReplyMeta& m, bool include_usage, Json delta_or_text, const char* finish, int index) {
  Json choice = {{"index", index}};
  if (m.endpoint == Endpoint::Chat) {
    choice["delta"] = std::move(delta_or_text);
  } else {
    choice["text"] = std::move(delta_or_text);
  }
  choice["logprobs"] = nullptr;
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

std::string StreamEvents::piece(std::string_view text, int index) const {
  const std::string t(text);
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json{{"content", t}} : Json(t),
                     nullptr, index));
}

std::string StreamEvents::closing(FinishReason finish, int index) const {
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json::object() : Json(""),
                     openai_finish_reason(finish), index));
}

std::string StreamEvents::tool_calls(const std::vector<ToolCall>& calls, int index) const {
  return event(chunk(meta_, include_usage_, Json{{"tool_calls", tool_calls_json(calls, /*with_index=*/true)}},
                     nullptr, index)) +
         event(chunk(meta_, include_usage_, Json::object(), "tool_calls", index));
}

std::string StreamEvents::usage(const Usage& u) const {
  Json j = envelope(meta_, /*chunk=*/true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(u);
  return event(j);
}

}  // namespace glass::server
