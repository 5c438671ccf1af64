#include "server/generation.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <utility>

namespace glass::server {
namespace {

ApiError stopping() {
  return ApiError{.status = 503, .message = "the server is shutting down", .type = "unavailable_error"};
}

ApiError submit_error(const Error& e, const char* prompt_param) {
  switch (e.code) {
    case ErrorCode::CapacityExceeded:
      if (e.message.rfind("engine: busy", 0) == 0)
        return ApiError{.status = 429,
                        .message = "the server is busy: too many requests wait already; retry later",
                        .type = "rate_limit_error",
                        .code = "rate_limit_exceeded"};
      return bad_field(prompt_param, e.message);
    case ErrorCode::InvalidArgument:
      // The fields were validated already: what is left is the prompt against the context / pool.
      return bad_field(prompt_param, e.message);
    case ErrorCode::Cancelled:
      return stopping();
    default:
      return ApiError{.status = 500, .message = e.message, .type = "server_error"};
  }
}

ApiError internal(const Error& e) {
  return ApiError{.status = 500, .message = e.message, .type = "server_error"};
}

// One streamed reply: what the content provider and its releaser share.
struct Stream {
  std::shared_ptr<Served> served;  // the engine outlives the response that reads from it
  std::shared_ptr<RequestHandle> handle;
  StreamEvents events;
  Metrics* metrics = nullptr;
  Inflight* inflight = nullptr;
  uint64_t inflight_id = 0;
  int64_t n_prompt = 0;
  bool opened = false;
  bool ended = false;  // the request's end was taken from the engine
};

// The client is gone: stop generating for it and tell httplib to drop the connection.
bool client_gone(Stream& st) {
  st.handle->cancel();
  return false;
}

bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// Called by httplib until done() or false. Each call writes one event, so a failed write (the client
// closed the connection) is seen within a piece. Nothing may throw out of here: httplib calls it
// outside its handler's try block, on a worker thread.
bool provide(Stream& st, httplib::DataSink& sink) {
  try {
    if (!st.opened) {
      st.opened = true;
      const std::string first = st.events.opening();
      if (!first.empty() && !write(sink, first)) return client_gone(st);
      return true;
    }
    if (std::optional<std::string> piece = st.handle->next_piece()) {
      if (piece->empty()) return true;  // nothing to say (an empty write would end the stream)
      if (!write(sink, st.events.piece(*piece))) return client_gone(st);
      return true;
    }
    Result<GenerateResult> r = st.handle->wait();
    st.ended = true;
    if (!r) {
      if (!write(sink, StreamEvents::error(error_body(internal(r.error()))))) return false;
      if (!write(sink, StreamEvents::done())) return false;
      sink.done();
      return true;
    }
    st.metrics->request_finished(st.n_prompt, *r);
    if (r->finish == FinishReason::Cancelled) return false;  // the client left, or the server stops
    std::string tail = st.events.closing(r->finish);
    if (st.events.include_usage())
      tail += st.events.usage({st.n_prompt, static_cast<int64_t>(r->tokens.size())});
    tail += StreamEvents::done();
    if (!write(sink, tail)) return false;
    sink.done();
    return true;
  } catch (...) {
    st.handle->cancel();
    return false;
  }
}

}  // namespace

uint64_t Inflight::add(const std::shared_ptr<RequestHandle>& h) {
  std::lock_guard lk(mu_);
  if (stopping_) {
    h->cancel();
    return 0;
  }
  const uint64_t id = next_++;
  handles_.emplace(id, h);
  return id;
}

void Inflight::remove(uint64_t id) {
  std::lock_guard lk(mu_);
  handles_.erase(id);
}

void Inflight::cancel_all() {
  std::lock_guard lk(mu_);
  stopping_ = true;
  for (auto& [id, weak] : handles_)
    if (auto h = weak.lock()) h->cancel();
}

void respond_error(const ApiError& e, httplib::Response& res) {
  res.status = e.status;
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

std::optional<ApiError> chat_prompt(const Model& model, const std::vector<ChatMessage>& messages,
                                    std::vector<int32_t>& out) {
  if (model.chat_template().empty())
    return bad_field("messages",
                     "the model has no chat template; start glass serve with --chat-template-file (or use "
                     "/v1/completions)");
  auto text = model.apply_chat_template(messages, /*add_generation_prompt=*/true);
  if (!text) return bad_field("messages", text.error().message);
  auto plain = model.tokenize(*text, /*add_special=*/false, /*parse_special=*/true);
  auto with_special = model.tokenize(*text, /*add_special=*/true, /*parse_special=*/true);
  if (!plain) return bad_field("messages", plain.error().message);
  if (!with_special) return bad_field("messages", with_special.error().message);
  // Templates that write BOS themselves (most do) must not get a second one from the tokenizer:
  // with special tokens the tokenizer prepends one token, and here the text begins with it already.
  const std::vector<int32_t>& p = *plain;
  const std::vector<int32_t>& w = *with_special;
  const bool prepends = w.size() > p.size() && std::equal(p.begin(), p.end(), w.begin() + 1);
  const bool template_wrote_bos = prepends && !p.empty() && p[0] == w[0];
  out = template_wrote_bos ? std::move(*plain) : std::move(*with_special);
  if (out.empty()) return bad_field("messages", "the chat template rendered an empty prompt");
  return std::nullopt;
}

void respond_generation(const GenerationContext& ctx, Endpoint endpoint, std::vector<int32_t> prompt,
                        GenerationFields fields, const char* prompt_param, httplib::Response& res) {
  Served& served = *ctx.served;
  ReplyMeta meta{.endpoint = endpoint,
                 .id = new_reply_id(endpoint),
                 .created = static_cast<int64_t>(std::time(nullptr)),
                 .model = served.name};
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  auto submitted =
      served.engine->submit(EngineRequest{.prompt = std::move(prompt), .config = std::move(fields.config)});
  if (!submitted) return respond_error(submit_error(submitted.error(), prompt_param), res);
  std::shared_ptr<RequestHandle> handle = std::move(*submitted);
  const uint64_t inflight_id = ctx.inflight->add(handle);

  if (!fields.stream) {
    // The client cannot be watched while this thread waits (httplib 0.11 gives a handler no view of
    // its connection): a request whose client left runs to its end, bounded by max_tokens.
    Result<GenerateResult> r = handle->wait();
    ctx.inflight->remove(inflight_id);
    if (!r) return respond_error(internal(r.error()), res);
    if (r->finish == FinishReason::Cancelled) return respond_error(stopping(), res);
    ctx.metrics->request_finished(n_prompt, *r);
    res.set_content(reply_body(meta, r->text, r->finish, {n_prompt, static_cast<int64_t>(r->tokens.size())}),
                    "application/json");
    return;
  }

  auto st = std::make_shared<Stream>(Stream{.served = ctx.served,
                                            .handle = handle,
                                            .events = StreamEvents(std::move(meta), fields.include_usage),
                                            .metrics = ctx.metrics,
                                            .inflight = ctx.inflight,
                                            .inflight_id = inflight_id,
                                            .n_prompt = n_prompt});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies (nginx) would otherwise hold events back
  res.set_chunked_content_provider(
      "text/event-stream", [st](size_t, httplib::DataSink& sink) { return provide(*st, sink); },
      // Runs when the response is destroyed, however the stream ended: one that ended before its
      // request did (the client left before the first event, a write failed) cancels it.
      [st](bool) noexcept {
        if (!st->ended) st->handle->cancel();
        st->inflight->remove(st->inflight_id);
      });
}

}  // namespace glass::server
