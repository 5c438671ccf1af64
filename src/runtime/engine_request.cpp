#include "runtime/engine_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "runtime/session_impl.h"

namespace glass {

RequestHandle::RequestHandle(std::shared_ptr<State> state) : state_(std::move(state)) {}
RequestHandle::~RequestHandle() = default;

void RequestHandle::cancel() { state_->cancel->store(true); }

bool RequestHandle::done() const {
  std::lock_guard lk(state_->mu);
  return state_->finished;
}

Result<GenerateResult> RequestHandle::wait() {
  std::unique_lock lk(state_->mu);
  state_->cv.wait(lk, [&] { return state_->finished; });
  return *state_->result;
}

std::optional<std::string> RequestHandle::next_piece() {
  std::unique_lock lk(state_->mu);
  ++state_->pullers;
  state_->cv.wait(lk, [&] { return state_->finished || !state_->pieces.empty(); });
  --state_->pullers;
  if (state_->pieces.empty()) return std::nullopt;
  std::string p = std::move(state_->pieces.front());
  state_->pieces.pop_front();
  return p;
}

RequestHandle::Info RequestHandle::info() const {
  std::lock_guard lk(state_->mu);
  return state_->info;
}

namespace runtime {

Result<std::unique_ptr<Request>> make_request(const Model::Impl& m, EngineRequest request,
                                              PieceCallback on_piece, const RequestLimits& limits) {
  const std::vector<int32_t>& prompt = request.prompt;
  if (prompt.empty()) return make_error(ErrorCode::InvalidArgument, "engine: request.prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= limits.vocab)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("engine: request.prompt[{}] = {} outside the vocabulary [0, {})", i,
                                    prompt[i], limits.vocab));
  const auto n = static_cast<int64_t>(prompt.size());
  if (n > limits.n_ctx)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("engine: request.prompt holds {} tokens, more than the context of {} (n_ctx)", n,
                    limits.n_ctx));
  if (n > limits.pool_rows)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("engine: request.prompt holds {} tokens, more than the KV cache pool's {} rows "
                    "(LoadOptions.kv_size)",
                    n, limits.pool_rows));
  auto r = std::make_unique<Request>();
  r->config = std::move(request.config);
  if (!r->config.cancel) r->config.cancel = std::make_shared<std::atomic<bool>>(false);
  auto gen = runtime::SequenceGen::create(m, r->config);
  if (!gen) return gen.error();
  r->gen = std::move(*gen);
  r->gen->accept_prompt(prompt);
  r->prompt_size = prompt.size();
  r->tokens = std::move(request.prompt);
  // Room for every token the request can reach (its context bounds it, whatever max_tokens says).
  r->tokens.reserve(static_cast<size_t>(std::min<int64_t>(
      static_cast<int64_t>(r->tokens.size()) + std::max(r->config.max_tokens, 0), m.info.n_ctx)));
  r->on_piece = std::move(on_piece);
  r->on_finished = std::move(request.on_finished);
  r->state = std::make_shared<RequestHandle::State>();
  r->state->cancel = r->config.cancel;
  r->submitted = Clock::now();
  Request* raw = r.get();
  r->piece = [raw](std::string_view p) {
    raw->streamed += p.size();
    bool pulled = false;
    {
      std::lock_guard lk(raw->state->mu);
      raw->state->pieces.emplace_back(p);
      pulled = raw->state->pullers > 0;
    }
    // A woken waiter costs the step a context switch on a busy core: only pullers want a piece.
    if (pulled) raw->state->cv.notify_all();
    if (!raw->on_piece || !raw->callback_alive) return true;
    try {
      raw->callback_alive = raw->on_piece(p);
    } catch (const std::exception& ex) {
      raw->callback_alive = false;
      raw->error =
          make_error(ErrorCode::Internal, fmt::format("engine: the piece callback threw: {}", ex.what()));
    } catch (...) {
      raw->callback_alive = false;
      raw->error = make_error(ErrorCode::Internal, "engine: the piece callback threw");
    }
    return raw->callback_alive;
  };
  return r;
}

}  // namespace runtime
}  // namespace glass
