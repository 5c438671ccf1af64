#include "server/generation.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

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

// One choice's next piece of text, or the log probabilities of its newest token (which the engine
// hands over before that token's text).
struct Queued {
  int choice = 0;
  std::string text;
  std::optional<TokenLogprobs> logprobs;
};

// Pieces of every choice of one stream, in the order the engine made them. The engine hands them to
// the submit callback on its thread; the content provider takes them here, so that n choices
// interleave without a reader blocked on any one of them.
struct PieceQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Queued> pieces;
  size_t ended = 0;  // choices whose end the engine signalled (on_finished)
};

struct ChoiceStream {
  std::shared_ptr<RequestHandle> handle;
  uint64_t inflight_id = 0;
  ReasoningSplitter splitter;  // thoughts apart, first
  ToolCallFilter filter;       // then calls held back from the content
  std::string content;         // the content the splitter passed on (read for calls at the end)
  size_t received = 0;         // bytes of the reply taken from the queue
  bool ended = false;          // its end was taken from the engine
  // Log probabilities of the tokens taken from the queue whose text has not been written yet (held
  // back by the detokenizer, a stop string or the tool-call filter); the next chunk written carries them.
  std::vector<TokenLogprobs> pending;
  size_t logprobs_sent = 0;  // tokens whose log probabilities went out
  int64_t text_offset = 0;   // completions: the characters of those tokens' texts
};

// One streamed reply: what the content provider and its releaser share.
struct Stream {
  std::shared_ptr<Served> served;  // the engine outlives the response that reads from it
  std::shared_ptr<PieceQueue> queue;
  std::vector<ChoiceStream> choices;
  StreamEvents events;
  ReplyFormat format;  // how replies are read back (calls, thoughts)
  Metrics* metrics = nullptr;
  Inflight* inflight = nullptr;
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  size_t n_ended = 0;
  bool opened = false;
};

void cancel_all(Stream& st) {
  for (ChoiceStream& c : st.choices) c.handle->cancel();
}

// The client is gone: stop generating for it and tell the transport to drop the connection.
bool client_gone(Stream& st) {
  cancel_all(st);
  return false;
}

bool write(DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// How long the provider waits for a piece or an end before it looks again (an end is signalled
// through the queue by on_finished; the poll is what bounds a wait should a signal be missed).
constexpr auto kPoll = std::chrono::milliseconds(5);

// The calls a finished reply made: harmony's from its messages (`made`, the splitter read them), the
// other families' from the content. A harmony call made when the request offered no tools is not a
// call: its body joins the content (it was never streamed).
std::optional<ParsedReply> read_calls(const ReplyFormat& format, const std::vector<ToolCall>& made,
                                      std::string& content) {
  if (!made.empty() && format.tools != ToolFamily::None)
    return ParsedReply{.content = content, .calls = made};
  for (const ToolCall& call : made) content += call.arguments;
  if (format.tools == ToolFamily::None || format.tools == ToolFamily::Harmony) return std::nullopt;
  return parse_tool_calls(format.tools, content, format.tools_json);
}

// Choice i ended: what of its text the queue had not delivered, then its calls or its held-back
// text, and its closing chunk. nullopt: the stream must end now (false: drop the connection).
std::optional<bool> finish_choice(Stream& st, int i, std::string& out) {
  ChoiceStream& c = st.choices[i];
  Result<GenerateResult> r = c.handle->wait();
  c.ended = true;
  ++st.n_ended;
  if (!r) {
    cancel_all(st);
    out += StreamEvents::error(error_body(internal(r.error()))) + StreamEvents::done();
    return true;
  }
  // Prompt tokens once per request, however many choices share the prompt.
  st.metrics->request_finished(i == 0 ? st.n_prompt : 0, *r);
  if (r->finish == FinishReason::Cancelled) {  // the client left, or the server stops
    cancel_all(st);
    return false;
  }
  st.n_generated += static_cast<int64_t>(r->tokens.size());
  // The log probabilities not sent yet go with the first chunk written from here, taken from the
  // result (the queue's copies are dropped with the rest of what it holds for this choice).
  LogprobsChunk left{.text_offset = c.text_offset};
  if (r->logprobs.size() > c.logprobs_sent) left.entries = std::span(r->logprobs).subspan(c.logprobs_sent);
  auto take_left = [&left] { return std::exchange(left, LogprobsChunk{}); };
  // The pieces add up to the text; what the queue still holds for this choice is dropped once ended.
  ReplyParts parts;
  if (c.received <= r->text.size()) parts = c.splitter.feed(std::string_view(r->text).substr(c.received));
  ReplyParts last = c.splitter.finish();
  parts.reasoning += last.reasoning;
  parts.content += last.content;
  const size_t streamed = c.content.size();
  c.content += parts.content;
  std::optional<ParsedReply> calls = read_calls(st.format, c.splitter.calls(), c.content);
  if (!parts.reasoning.empty()) out += st.events.reasoning_piece(parts.reasoning, i, take_left());
  if (const std::string rest = c.filter.feed(std::string_view(c.content).substr(streamed)); !rest.empty())
    out += st.events.piece(rest, i, take_left());
  if (calls) {
    out += st.events.tool_calls(calls->calls, i, take_left());
  } else {
    if (const std::string held = c.filter.held(); !held.empty()) out += st.events.piece(held, i, take_left());
    out += st.events.closing(r->finish, i, take_left());
  }
  return std::nullopt;
}

// Called by the transport until done() or false. Each call writes what one piece or one end makes, so
// a failed write (the client closed the connection) is seen within a piece. Nothing may throw out of
// here: the transport calls it outside the handler's try block, on a worker thread.
bool provide(Stream& st, DataSink& sink) {
  try {
    if (!st.opened) {
      st.opened = true;
      std::string first;
      for (size_t i = 0; i < st.choices.size(); ++i) first += st.events.opening(static_cast<int>(i));
      if (!first.empty() && !write(sink, first)) return client_gone(st);
      return true;
    }
    std::optional<Queued> piece;
    {
      std::unique_lock lk(st.queue->mu);
      st.queue->cv.wait_for(lk, kPoll,
                            [&] { return !st.queue->pieces.empty() || st.queue->ended > st.n_ended; });
      // Log probabilities wait in their choice for the text they come before.
      while (!st.queue->pieces.empty() && st.queue->pieces.front().logprobs) {
        Queued& q = st.queue->pieces.front();
        if (ChoiceStream& c = st.choices[q.choice]; !c.ended) c.pending.push_back(std::move(*q.logprobs));
        st.queue->pieces.pop_front();
      }
      if (!st.queue->pieces.empty()) {
        piece = std::move(st.queue->pieces.front());
        st.queue->pieces.pop_front();
      }
    }
    std::string out;
    if (piece) {
      ChoiceStream& c = st.choices[piece->choice];
      if (c.ended) return true;  // finish_choice took it from the result already
      c.received += piece->text.size();
      const ReplyParts parts = c.splitter.feed(piece->text);
      c.content += parts.content;
      const std::string text = c.filter.feed(parts.content);
      if (text.empty() && parts.reasoning.empty()) return true;  // an empty write would end the stream
      // The log probabilities go with the first chunk written.
      const LogprobsChunk lp{.entries = c.pending, .text_offset = c.text_offset};
      std::string chunks;
      if (!parts.reasoning.empty()) chunks = st.events.reasoning_piece(parts.reasoning, piece->choice, lp);
      if (!text.empty())
        chunks += st.events.piece(text, piece->choice, chunks.empty() ? lp : LogprobsChunk{});
      if (!write(sink, chunks)) return client_gone(st);
      if (!c.pending.empty()) {
        c.logprobs_sent += c.pending.size();
        c.text_offset += logprobs_text_length(*st.served->model, c.pending);
        c.pending.clear();
      }
      return true;
    }
    // done() outside the queue's lock: the engine may hold its own while it calls into the queue.
    for (size_t i = 0; i < st.choices.size(); ++i) {
      if (st.choices[i].ended || !st.choices[i].handle->done()) continue;
      if (auto end = finish_choice(st, static_cast<int>(i), out)) {
        if (!*end) return false;
        if (!write(sink, out)) return false;
        sink.done();
        return true;
      }
      break;  // one end per call
    }
    if (st.n_ended == st.choices.size()) {
      if (st.events.include_usage()) out += st.events.usage({st.n_prompt, st.n_generated});
      out += StreamEvents::done();
      if (!write(sink, out)) return false;
      sink.done();
      return true;
    }
    if (!out.empty() && !write(sink, out)) return client_gone(st);
    return true;
  } catch (...) {
    cancel_all(st);
    return false;
  }
}

// The config of choice i: seed + i when a seed was given, so choices differ yet repeat.
GenerateConfig choice_config(const GenerateConfig& c, int i) {
  GenerateConfig out = c;
  if (c.sampling.seed != SamplingConfig::kRandomSeed)
    out.sampling.seed = c.sampling.seed + static_cast<uint64_t>(i);
  return out;
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

void respond_error(const ApiError& e, HttpResponse& res) {
  res.status = e.status;
  if (e.status == 429) res.set_header("Retry-After", "1");
  res.set_content(error_body(e), "application/json");
}

std::optional<ApiError> chat_prompt(const Model& model, const ChatRequest& request, ChatPrompt& prompt) {
  if (model.chat_template().empty())
    return bad_field("messages",
                     "the model has no chat template; start glass serve with --chat-template-file (or use "
                     "/v1/completions)");
  auto text = model.apply_chat_template(request.messages,
                                        ChatTemplateInputs{.add_generation_prompt = true,
                                                           .tools_json = request.tools_json,
                                                           .kwargs_json = request.template_kwargs_json});
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
  prompt.ids = template_wrote_bos ? std::move(*plain) : std::move(*with_special);
  if (prompt.ids.empty()) return bad_field("messages", "the chat template rendered an empty prompt");
  prompt.text = std::move(*text);
  return std::nullopt;
}

void respond_generation(const GenerationContext& ctx, Endpoint endpoint, std::vector<int32_t> prompt,
                        GenerationFields fields, const char* prompt_param, HttpResponse& res,
                        ReplyFormat format) {
  Served& served = *ctx.served;
  ReplyMeta meta{.endpoint = endpoint,
                 .id = new_reply_id(endpoint),
                 .created = static_cast<int64_t>(std::time(nullptr)),
                 .model = served.name,
                 .logprobs_model = fields.config.logprobs ? served.model.get() : nullptr};
  if (endpoint != Endpoint::Chat) format = {};
  const ToolFamily tools = format.tools;
  if (format.control_text) fields.config.render_control_tokens = true;
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  const int n = std::max(1, fields.n);
  auto queue = std::make_shared<PieceQueue>();
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::vector<uint64_t> inflight_ids;
  for (int i = 0; i < n; ++i) {
    PieceCallback on_piece;
    if (fields.stream)
      on_piece = [queue, i](std::string_view piece) {
        {
          std::lock_guard lk(queue->mu);
          queue->pieces.push_back(Queued{.choice = i, .text = std::string(piece)});
        }
        queue->cv.notify_one();
        return true;
      };
    GenerateConfig config = choice_config(fields.config, i);
    if (fields.stream && config.logprobs)
      // No wake-up: the token's text follows at once (or, held back, with a later piece or the end).
      config.on_logprobs = [queue, i](const TokenLogprobs& t) {
        std::lock_guard lk(queue->mu);
        queue->pieces.push_back(Queued{.choice = i, .logprobs = t});
      };
    std::function<void()> on_finished;
    if (fields.stream)
      on_finished = [queue] {
        {
          std::lock_guard lk(queue->mu);
          ++queue->ended;
        }
        queue->cv.notify_one();
      };
    auto submitted = served.engine->submit(
        EngineRequest{.prompt = prompt, .config = std::move(config), .on_finished = std::move(on_finished)},
        std::move(on_piece));
    if (!submitted) {
      // All choices or none: those submitted already are not answered.
      for (size_t k = 0; k < handles.size(); ++k) {
        handles[k]->cancel();
        ctx.inflight->remove(inflight_ids[k]);
      }
      return respond_error(submit_error(submitted.error(), prompt_param), res);
    }
    handles.push_back(std::move(*submitted));
    inflight_ids.push_back(ctx.inflight->add(handles.back()));
  }

  if (!fields.stream) {
    // A client that leaves meanwhile is seen by the transport, which cancels these through the
    // Inflight (Server::Impl::generate).
    std::vector<ChoiceReply> choices;
    Usage usage{.prompt_tokens = n_prompt};
    std::optional<ApiError> failed;
    for (int i = 0; i < n; ++i) {
      Result<GenerateResult> r = handles[i]->wait();
      ctx.inflight->remove(inflight_ids[i]);
      if (failed) continue;
      if (!r || r->finish == FinishReason::Cancelled) {
        failed = !r ? internal(r.error()) : stopping();
        for (int k = i + 1; k < n; ++k) handles[k]->cancel();
        continue;
      }
      ctx.metrics->request_finished(i == 0 ? n_prompt : 0, *r);
      usage.completion_tokens += static_cast<int64_t>(r->tokens.size());
      SplitReply split = split_reply(format.reading, r->text);
      ChoiceReply c{.reasoning = std::move(split.parts.reasoning),
                    .finish = r->finish,
                    .logprobs = std::move(r->logprobs)};
      c.tools = read_calls(format, split.calls, split.parts.content);
      c.text = std::move(split.parts.content);
      choices.push_back(std::move(c));
    }
    if (failed) return respond_error(*failed, res);
    res.set_content(reply_body(meta, choices, usage), "application/json");
    return;
  }

  auto st = std::make_shared<Stream>(Stream{.served = ctx.served,
                                            .queue = std::move(queue),
                                            .choices = {},
                                            .events = StreamEvents(std::move(meta), fields.include_usage),
                                            .format = format,
                                            .metrics = ctx.metrics,
                                            .inflight = ctx.inflight,
                                            .n_prompt = n_prompt});
  for (int i = 0; i < n; ++i)
    st->choices.push_back(ChoiceStream{.handle = handles[i],
                                       .inflight_id = inflight_ids[i],
                                       .splitter = ReasoningSplitter(format.reading),
                                       .filter = ToolCallFilter(tools)});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");  // proxies (nginx) would otherwise hold events back
  res.set_chunked_content_provider(
      "text/event-stream", [st](DataSink& sink) { return provide(*st, sink); },
      // Runs once the stream is over, however it ended: one that ended before its
      // requests did (the client left before the first event, a write failed) cancels them.
      [st](bool) noexcept {
        for (ChoiceStream& c : st->choices) {
          if (!c.ended) c.handle->cancel();
          st->inflight->remove(c.inflight_id);
        }
      });
}

}  // namespace glass::server
