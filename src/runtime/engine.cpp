// Engine: one loop thread, one Session whose sequence state every request shares. Each step: retire
// what was cancelled, let the scheduler (runtime/scheduler.h) plan one batch whose blocks are all
// reserved up front, evaluate it in one call, sample the sequences whose pending tokens were all
// evaluated, retire what finished. Planning and retiring hold the engine mutex (they touch the
// queue); the evaluation and the user's callbacks never do.
#include "glass/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "runtime/access.h"
#include "runtime/engine_request.h"
#include "runtime/scheduler.h"
#include "runtime/sequence.h"
#include "runtime/session_impl.h"

namespace glass {

using runtime::Clock;
using runtime::Request;

namespace {

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct CheckJob {
  bool done = false;
  Status status;
};

}  // namespace

struct Engine::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl* m = nullptr;
  EngineOptions opt;  // resolved: no zeros left
  runtime::SchedulePolicy policy;
  std::unique_ptr<Session> session;
  Session::Impl* s = nullptr;
  kv::State* kv = nullptr;
  int64_t pool_rows = 0, vocab = 0;

  mutable std::mutex mu;
  std::condition_variable wake;     // the loop sleeps on it
  std::condition_variable checked;  // check_invariants waits on it
  bool stop = false;
  // The queue is guarded by mu; running and id_used are the loop thread's.
  runtime::SchedulerState sched;
  std::deque<std::unique_ptr<Request>>& queue = sched.queue;
  std::vector<std::unique_ptr<Request>>& running = sched.running;
  std::vector<std::shared_ptr<CheckJob>> checks;  // guarded by mu
  Stats snapshot;                                 // guarded by mu

  // Loop thread only.
  std::vector<std::unique_ptr<Request>> retired;  // finished, to deliver outside the lock
  runtime::StepBatch batch;
  std::vector<int32_t> batch_tokens, batch_seqs;
  std::vector<float> logits;
  int64_t completed = 0, cancelled = 0, preempted = 0, prefix_hits = 0, steps = 0;

  std::thread thread;

  void loop();
  void step(std::unique_lock<std::mutex>& lk);
  void plan();
  void evaluate();
  void shutdown();
  void fail_all(const Error& e);

  void retire_running(size_t i, FinishReason reason);
  void retire(std::unique_ptr<Request> r, FinishReason reason);
  void publish();
  void deliver_retired();
  void deliver(Request& r);
};

void Engine::Impl::retire_running(size_t i, FinishReason reason) {
  std::unique_ptr<Request> r = std::move(running[i]);
  running.erase(running.begin() + static_cast<ptrdiff_t>(i));
  retire(std::move(r), reason);
}

// Ends a request that is in neither running nor the queue: its blocks go back now (between steps),
// its result is delivered once the lock is dropped.
void Engine::Impl::retire(std::unique_ptr<Request> r, FinishReason reason) {
  r->gen->finish(reason);  // keeps the reason when SequenceGen already finished
  if (r->seq >= 0) {
    kv->release(r->seq);
    sched.id_used[static_cast<size_t>(r->seq)] = 0;
    r->seq = -1;
  }
  ++completed;
  if (!r->error && r->gen->result().finish == FinishReason::Cancelled) ++cancelled;
  retired.push_back(std::move(r));
}

void Engine::Impl::publish() {
  snapshot.queued = static_cast<int64_t>(queue.size());
  snapshot.running = static_cast<int64_t>(running.size());
  snapshot.completed = completed;
  snapshot.cancelled = cancelled;
  snapshot.preempted = preempted;
  snapshot.prefix_hit_tokens = prefix_hits;
  const kv::PoolCounts blocks = kv->counts();
  snapshot.blocks_used = blocks.used;
  snapshot.blocks_free = blocks.free;
  snapshot.blocks_cached = blocks.cached;
  snapshot.blocks_total = blocks.used + blocks.free;
  snapshot.block_size = kv->spec().groups.empty() ? 0 : kv->spec().groups[0].block_size;
  snapshot.steps = steps;
}

void Engine::Impl::deliver_retired() {
  for (auto& r : retired) deliver(*r);
  retired.clear();
}

// Completes the handle: the text the request held back (detokenizer, stop matcher) when it ended
// early goes out as a last piece, so the pieces always add up to the result's text.
void Engine::Impl::deliver(Request& r) {
  GenerateResult& g = r.gen->result();
  if (g.text.size() > r.streamed) {
    const std::string tail = g.text.substr(r.streamed);
    r.streamed = g.text.size();
    {
      std::lock_guard lk(r.state->mu);
      r.state->pieces.push_back(tail);
    }
    if (r.on_piece && r.callback_alive) {
      try {
        (void)r.on_piece(tail);
      } catch (...) {
        // Ended already; the exception has nowhere to go but the result.
        if (!r.error) r.error = make_error(ErrorCode::Internal, "engine: the piece callback threw");
      }
    }
  }
  const auto now = Clock::now();
  g.timings.n_prompt_tokens = static_cast<int64_t>(r.prompt_size);
  g.timings.n_decoded = static_cast<int64_t>(g.tokens.size());
  if (r.admitted_once && r.prompt_evaluated) g.timings.prompt_ms = ms_between(r.admitted, r.prompt_done);
  if (r.first_token) g.timings.ttft_ms = ms_between(r.submitted, r.first_token_at);
  if (r.prompt_evaluated) g.timings.decode_ms = ms_between(r.prompt_done, now);
  g.counters.plans_compiled = m->plans.compiles();
  g.counters.kv_rows_written = r.kv_rows;
  g.counters.prefix_tokens_recomputed = 0;
  std::unique_lock lk(r.state->mu);
  r.state->result = r.error ? Result<GenerateResult>(*r.error) : Result<GenerateResult>(std::move(g));
  r.state->info = {r.prefix_hits, r.preemptions};
  r.state->finished = true;
  r.state->cv.notify_all();
  lk.unlock();
  if (r.on_finished) {
    try {
      r.on_finished();
    } catch (...) {  // the result is out already: nothing is left to tell
    }
  }
}

void Engine::Impl::plan() {
  runtime::schedule(sched, *kv, policy, batch);
  preempted += batch.preempted;
  prefix_hits += batch.prefix_hit_tokens;
  const auto now = Clock::now();
  for (Request* r : batch.admitted)
    if (!r->admitted_once) {
      r->admitted_once = true;
      r->admitted = now;
    }
  for (auto& r : batch.finished) retire(std::move(r), FinishReason::Length);
  batch.finished.clear();
}

void Engine::Impl::evaluate() {
  batch_tokens.clear();
  batch_seqs.clear();
  // All of a sequence's tokens together: the cpu attention kernel is fastest that way.
  for (const runtime::StepEntry& e : batch.entries) {
    const auto from = e.r->tokens.begin() + e.r->n_eval;
    batch_tokens.insert(batch_tokens.end(), from, from + e.n);
    batch_seqs.insert(batch_seqs.end(), static_cast<size_t>(e.n), e.r->seq);
  }
  const std::vector<runtime::StepEntry>& entries = batch.entries;
  logits.resize(entries.size() * static_cast<size_t>(vocab));
  const uint64_t rows_before = s->stats.kv_rows_written;
  const Status st = s->eval_tokens(batch_tokens, batch_seqs, LogitRows::LastOfEachSequence, logits);
  ++steps;
  if (!st) {
    for (const runtime::StepEntry& e : entries) e.r->error = st.error();
    return;
  }
  const uint64_t per_token = (s->stats.kv_rows_written - rows_before) / batch_tokens.size();
  const int64_t n_ctx = m->info.n_ctx;
  for (size_t k = 0; k < entries.size(); ++k) {
    Request& r = *entries[k].r;
    r.n_eval += entries[k].n;
    r.kv_rows += per_token * static_cast<uint64_t>(entries[k].n);
    if (r.pending() > 0) continue;  // mid-prompt: its logits row is not a prediction anyone samples
    const auto now = Clock::now();
    if (!r.prompt_evaluated) {
      r.prompt_evaluated = true;
      r.prompt_done = now;
    }
    auto next = r.gen->step(
        std::span<const float>(logits.data() + k * static_cast<size_t>(vocab), static_cast<size_t>(vocab)),
        r.piece);
    if (r.gen->error())
      r.error = *r.gen->error();  // non-finite logits, or a constraint that allowed no token
    if (!r.first_token && !r.gen->result().tokens.empty()) {
      r.first_token = true;
      r.first_token_at = Clock::now();
    }
    if (!next) continue;  // finished; retired after the step
    r.tokens.push_back(*next);
    if (r.n_eval >= n_ctx) r.gen->finish(FinishReason::Length);  // its context is full, as in generate
  }
}

void Engine::Impl::step(std::unique_lock<std::mutex>& lk) {
  // Step boundary: cancellations take effect, their blocks go back.
  for (size_t i = 0; i < running.size();)
    if (running[i]->cancelled())
      retire_running(i, FinishReason::Cancelled);
    else
      ++i;
  for (auto it = queue.begin(); it != queue.end();) {
    if ((*it)->cancelled()) {
      std::unique_ptr<Request> r = std::move(*it);
      it = queue.erase(it);
      retire(std::move(r), FinishReason::Cancelled);
    } else {
      ++it;
    }
  }
  plan();
  for (const auto& r : running) {
    std::lock_guard slk(r->state->mu);
    r->state->info = {r->prefix_hits, r->preemptions};
  }
  publish();
  lk.unlock();
  deliver_retired();
  if (!batch.entries.empty()) evaluate();
  lk.lock();
  for (size_t i = 0; i < running.size();)
    if (running[i]->error || running[i]->gen->done())
      retire_running(i, FinishReason::Length);  // the reason SequenceGen recorded is kept
    else
      ++i;
  publish();
  lk.unlock();
  deliver_retired();
  lk.lock();
}

void Engine::Impl::fail_all(const Error& e) {
  batch.entries.clear();
  while (!running.empty()) {
    running.back()->error = e;
    retire_running(running.size() - 1, FinishReason::Cancelled);
  }
  while (!queue.empty()) {
    std::unique_ptr<Request> r = std::move(queue.front());
    queue.pop_front();
    r->error = e;
    retire(std::move(r), FinishReason::Cancelled);
  }
}

void Engine::Impl::loop() {
  std::unique_lock lk(mu);
  while (true) {
    wake.wait(lk, [&] { return stop || !queue.empty() || !running.empty() || !checks.empty(); });
    if (!checks.empty()) {
      const Status st = runtime::check_schedule(sched, *kv, policy);
      for (auto& job : checks) {
        job->status = st;
        job->done = true;
      }
      checks.clear();
      checked.notify_all();
    }
    if (stop) break;
    if (queue.empty() && running.empty()) continue;
    try {
      step(lk);
    } catch (const std::exception& e) {
      if (!lk.owns_lock()) lk.lock();
      fail_all(make_error(ErrorCode::Internal, fmt::format("engine: step failed: {}", e.what())));
      publish();
      lk.unlock();
      deliver_retired();
      lk.lock();
    }
  }
  // Stopping: what is left ends Cancelled, with what it generated.
  while (!running.empty()) retire_running(running.size() - 1, FinishReason::Cancelled);
  while (!queue.empty()) {
    std::unique_ptr<Request> r = std::move(queue.front());
    queue.pop_front();
    retire(std::move(r), FinishReason::Cancelled);
  }
  for (auto& job : checks) {
    job->status = make_error(ErrorCode::Cancelled, "engine: stopped");
    job->done = true;
  }
  checks.clear();
  checked.notify_all();
  publish();
  lk.unlock();
  deliver_retired();
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Engine::~Engine() {
  {
    std::lock_guard lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->wake.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<std::unique_ptr<Engine>> Engine::create(std::shared_ptr<const Model> model,
                                               const EngineOptions& options) {
  if (!model) return make_error(ErrorCode::InvalidArgument, "engine: no model");
  const ModelInfo& info = model->info();
  if (options.max_queued < 0)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("engine: max_queued {} must not be negative", options.max_queued));
  if (!(options.admit_watermark >= 0.0f && options.admit_watermark < 1.0f))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("engine: admit_watermark {} outside [0, 1) (a fraction of the KV pool)",
                                  options.admit_watermark));
  if (options.step_tokens < 0 || options.step_tokens > info.n_batch)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("engine: step_tokens {} outside [0, {}] (0: the model's n_batch; a step is "
                                  "one plan call)",
                                  options.step_tokens, info.n_batch));
  auto impl = std::make_unique<Impl>();
  impl->m = &internal::Access::impl(*model);
  impl->opt = options;
  if (impl->opt.step_tokens == 0) impl->opt.step_tokens = info.n_batch;
  auto session = model->new_session(options.session);
  if (!session) return session.error();
  impl->session = std::move(*session);
  impl->model = std::move(model);
  impl->s = &internal::Access::impl(*impl->session);
  impl->kv = impl->s->kv.get();
  const int32_t n_seq = impl->kv->n_seq();
  if (options.max_running < 0 || options.max_running > n_seq)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("engine: max_running {} outside [0, {}] (0: the session's n_seq_max {})",
                                  options.max_running, n_seq, n_seq));
  // Dense storage holds as many sequences as the pool has full-length runs of rows for.
  const int32_t usable = impl->kv->n_seq_usable();
  if (impl->opt.max_running == 0) impl->opt.max_running = usable;
  if (impl->opt.max_running > usable)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("engine: max_running {}, but the dense KV cache holds {} sequences of n_ctx "
                    "(raise LoadOptions.kv_size, or use paged storage)",
                    impl->opt.max_running, usable));
  impl->pool_rows = impl->kv->sequence_capacity();
  const kv::GroupSpec& full = impl->kv->spec().groups[0];
  impl->policy = {
      .step_tokens = impl->opt.step_tokens,
      .max_running = impl->opt.max_running,
      .watermark_tokens = static_cast<int64_t>(static_cast<double>(impl->opt.admit_watermark) *
                                               static_cast<double>(full.rows / full.block_size)) *
                          full.block_size,
      .prefix_cache = impl->opt.prefix_cache,
      .checkpoint_every = kv::recurrent_group(impl->kv->spec()) >= 0 ? full.block_size : 0,
  };
  impl->vocab = info.vocab_size;
  impl->sched.id_used.assign(static_cast<size_t>(impl->opt.max_running), 0);
  impl->logits.reserve(static_cast<size_t>(impl->opt.max_running) * static_cast<size_t>(impl->vocab));
  {
    std::lock_guard lk(impl->mu);
    impl->publish();
  }
  try {
    impl->thread = std::thread([p = impl.get()] { p->loop(); });
  } catch (const std::system_error& e) {
    return make_error(ErrorCode::Internal, fmt::format("engine: cannot start the loop thread: {}", e.what()));
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

Result<std::shared_ptr<RequestHandle>> Engine::submit(EngineRequest request, PieceCallback on_piece) {
  Impl& e = *impl_;
  try {
    auto made =
        runtime::make_request(*e.m, std::move(request), std::move(on_piece),
                              {.vocab = e.vocab, .n_ctx = e.model->info().n_ctx, .pool_rows = e.pool_rows});
    if (!made) return made.error();
    std::unique_ptr<Request> r = std::move(*made);
    auto handle = std::make_shared<RequestHandle>(r->state);
    std::unique_lock lk(e.mu);
    if (e.stop) return make_error(ErrorCode::Cancelled, "engine: stopping");
    if (r->gen->done()) {
      // max_tokens 0: nothing to evaluate (generate would evaluate the prompt for no token).
      // The pool is the loop thread's: only the counters change here.
      e.snapshot.completed = ++e.completed;
      lk.unlock();
      e.deliver(*r);
      return handle;
    }
    if (static_cast<int64_t>(e.queue.size()) >= e.opt.max_queued)
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("engine: busy: {} requests wait already (EngineOptions.max_queued {})",
                                    e.queue.size(), e.opt.max_queued));
    e.queue.push_back(std::move(r));
    e.snapshot.queued = static_cast<int64_t>(e.queue.size());
    lk.unlock();
    e.wake.notify_all();
    return handle;
  } catch (const std::exception& ex) {
    return make_error(ErrorCode::Internal, fmt::format("engine: submit failed: {}", ex.what()));
  }
}

Engine::Stats Engine::stats() const {
  std::lock_guard lk(impl_->mu);
  return impl_->snapshot;
}

Status Engine::check_invariants() {
  auto job = std::make_shared<CheckJob>();
  std::unique_lock lk(impl_->mu);
  if (impl_->stop) return make_error(ErrorCode::Cancelled, "engine: stopping");
  impl_->checks.push_back(job);
  impl_->wake.notify_all();
  impl_->checked.wait(lk, [&] { return job->done; });
  return job->status;
}

}  // namespace glass
