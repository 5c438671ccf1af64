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

std::string reply_body(const ReplyMeta& meta, const std::string& text, FinishReason finish,
                       const Usage& usage) {
  Json choice = {{"index", 0}};
  if (meta.endpoint == Endpoint::Chat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = openai_finish_reason(finish);
  Json j = envelope(meta, /*chunk=*/false);
  j["choices"] = Json::array({std::move(choice)});
  j["usage"] = usage_json(usage);
  return dump(j);
}

namespace {

std::string event(const Json& j) { return "data: " + dump(j) + "\n\n"; }

Json chunk(const ReplyMeta& m, bool include_usage, Json delta_or_text, const char* finish) {
  Json choice = {{"index", 0}};
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

std::string StreamEvents::opening() const {
  if (meta_.endpoint != Endpoint::Chat) return {};
  return event(chunk(meta_, include_usage_, Json{{"role", "assistant"}, {"content", ""}}, nullptr));
}

std::string StreamEvents::piece(std::string_view text) const {
  const std::string t(text);
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json{{"content", t}} : Json(t),
                     nullptr));
}

std::string StreamEvents::closing(FinishReason finish) const {
  return event(chunk(meta_, include_usage_, meta_.endpoint == Endpoint::Chat ? Json::object() : Json(""),
                     openai_finish_reason(finish)));
}

std::string StreamEvents::usage(const Usage& u) const {
  Json j = envelope(meta_, /*chunk=*/true);
  j["choices"] = Json::array();
  j["usage"] = usage_json(u);
  return event(j);
}

}  // namespace glass::server
