// Engine: one loop thread, one Session, one paged KV pool shared by every request. Each step:
// retire what was cancelled, plan one batch (decode tokens first, then prompt chunks, then new
// admissions) whose blocks are all reserved up front — preempting the newest sequence when the pool
// is short, so eval_tokens never runs out — evaluate it in one call, sample the sequences whose
// pending tokens were all evaluated, retire what finished. Planning and retiring hold the engine
// mutex (they touch the queue); the evaluation and the user's callbacks never do.
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
  std::unique_ptr<Session> session;
  Session::Impl* s = nullptr;
  runtime::BlockPool* pool = nullptr;
  int64_t block = 0, pool_rows = 0, vocab = 0;

  mutable std::mutex mu;
  std::condition_variable wake;     // the loop sleeps on it
  std::condition_variable checked;  // check_invariants waits on it
  bool stop = false;
  std::deque<std::unique_ptr<Request>> queue;     // guarded by mu
  std::vector<std::shared_ptr<CheckJob>> checks;  // guarded by mu
  Stats snapshot;                                 // guarded by mu

  // Loop thread only.
  std::vector<std::unique_ptr<Request>> running;  // in admission order
  std::vector<uint8_t> id_used;
  int64_t watermark_tokens = 0;  // EngineOptions::admit_watermark of the full-attention pool, in tokens
  std::vector<std::unique_ptr<Request>> retired;  // finished, to deliver outside the lock
  struct Entry {
    Request* r;
    int64_t n;  // tokens of r this step evaluates
  };
  std::vector<Entry> entries;
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

  int64_t room(const Request& r) const;
  bool take(Request& r, int64_t n);
  void preempt_newest();
  void retire_running(size_t i, FinishReason reason);
  void retire(std::unique_ptr<Request> r, FinishReason reason);
  void publish();
  void deliver_retired();
  void deliver(Request& r);
  Status verify() const;
};

// Rows r can take this step without preempting: the free (or evictable) blocks, plus what is left
// of its own last block.
int64_t Engine::Impl::room(const Request& r) const { return s->room(r.seq, r.n_eval); }

// Reserves n more tokens of r and adds them to the batch.
bool Engine::Impl::take(Request& r, int64_t n) {
  if (auto st = s->reserve(r.seq, r.n_eval + n); !st) {
    r.error = make_error(ErrorCode::Internal, "engine: " + st.error().message);  // room() said it fits
    return false;
  }
  entries.push_back({&r, n});
  return true;
}

// The most recently admitted sequence gives its blocks back and waits at the front of the queue
// with everything it generated as its prompt; its SequenceGen (sampler and RNG state, text) goes
// with it, so it continues exactly where it stopped.
void Engine::Impl::preempt_newest() {
  std::unique_ptr<Request> v = std::move(running.back());
  running.pop_back();
  entries.erase(
      std::remove_if(entries.begin(), entries.end(), [&](const Entry& e) { return e.r == v.get(); }),
      entries.end());
  s->release(v->seq);
  id_used[static_cast<size_t>(v->seq)] = 0;
  v->seq = -1;
  v->n_eval = 0;
  ++v->preemptions;
  ++preempted;
  queue.push_front(std::move(v));
}

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
    s->release(r->seq);
    id_used[static_cast<size_t>(r->seq)] = 0;
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
  snapshot.blocks_used = pool->n_used();
  snapshot.blocks_free = pool->n_free();
  snapshot.blocks_cached = pool->n_cached();
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
  entries.clear();
  int64_t budget = opt.step_tokens;
  // Decodes first (one pending token), then the chunks of sequences still prefilling, both oldest
  // first, so a decode waits at most for one chunk per step.
  for (int phase = 0; phase < 2; ++phase) {
    for (size_t i = 0; i < running.size() && budget > 0; ++i) {
      Request& r = *running[i];
      if ((r.pending() == 1) != (phase == 0)) continue;
      const int64_t want = std::min(r.pending(), budget);
      while (true) {
        if (const int64_t n = std::min(want, room(r)); n > 0) {
          if (take(r, n)) {
            budget -= n;
          } else {
            retire_running(i--, FinishReason::Length);
          }
          break;
        }
        if (running.size() == 1) {
          // Alone, with every block its own: the pool cannot hold it, and generate alone would
          // stop here too.
          retire_running(i--, FinishReason::Length);
          break;
        }
        const bool self = running.back().get() == &r;
        for (const Entry& e : entries)  // a preempted entry's tokens go back to the budget
          if (e.r == running.back().get()) budget += e.n;
        preempt_newest();
        if (self) break;
      }
    }
  }
  // Admissions, in queue order: a request starts when a sequence id is free and its first chunk
  // fits in the blocks left (shrunk to what fits when nothing else runs, so it never waits forever).
  while (budget > 0 && static_cast<int32_t>(running.size()) < opt.max_running && !queue.empty()) {
    Request& r = *queue.front();
    const auto id = static_cast<int32_t>(std::find(id_used.begin(), id_used.end(), 0) - id_used.begin());
    const int64_t matched = opt.prefix_cache ? s->match_prefix(id, r.tokens) : 0;
    const int64_t want = std::min(static_cast<int64_t>(r.tokens.size()) - matched, budget);
    const int64_t fits = s->room(id, matched);
    if (!running.empty() && (fits < want || fits - want < watermark_tokens)) {
      s->release(id);
      break;
    }
    std::unique_ptr<Request> owned = std::move(queue.front());
    queue.pop_front();
    id_used[static_cast<size_t>(id)] = 1;
    r.seq = id;
    r.n_eval = matched;
    r.prefix_hits += matched;
    prefix_hits += matched;
    if (!r.admitted_once) {
      r.admitted_once = true;
      r.admitted = Clock::now();
    }
    running.push_back(std::move(owned));
    const int64_t n = std::min(want, fits);
    if (n <= 0 || !take(r, n)) {
      retire_running(running.size() - 1, FinishReason::Length);  // alone it does not fit either
      continue;
    }
    budget -= n;
  }
}

void Engine::Impl::evaluate() {
  batch_tokens.clear();
  batch_seqs.clear();
  // All of a sequence's tokens together: the cpu attention kernel is fastest that way.
  for (const Entry& e : entries) {
    const auto from = e.r->tokens.begin() + e.r->n_eval;
    batch_tokens.insert(batch_tokens.end(), from, from + e.n);
    batch_seqs.insert(batch_seqs.end(), static_cast<size_t>(e.n), e.r->seq);
  }
  logits.resize(entries.size() * static_cast<size_t>(vocab));
  const uint64_t rows_before = s->stats.kv_rows_written;
  const Status st = s->eval_tokens(batch_tokens, batch_seqs, LogitRows::LastOfEachSequence, logits);
  ++steps;
  if (!st) {
    for (const Entry& e : entries) e.r->error = st.error();
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
  if (!entries.empty()) evaluate();
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

Status Engine::Impl::verify() const {
  auto fail = [](const std::string& what) { return make_error(ErrorCode::Internal, "engine: " + what); };
  if (static_cast<int32_t>(running.size()) > opt.max_running)
    return fail(fmt::format("{} sequences run, max_running is {}", running.size(), opt.max_running));
  const size_t n_ids = s->groups[0].seqs.size();
  std::vector<uint8_t> held(n_ids, 0);
  for (const auto& r : running) {
    if (r->seq < 0 || r->seq >= static_cast<int32_t>(n_ids) || held[static_cast<size_t>(r->seq)])
      return fail(fmt::format("a running request holds sequence id {}, invalid or shared", r->seq));
    held[static_cast<size_t>(r->seq)] = 1;
    if (!id_used[static_cast<size_t>(r->seq)])
      return fail(fmt::format("sequence id {} not marked used", r->seq));
    if (r->pending() < 1) return fail(fmt::format("sequence {} runs with no pending token", r->seq));
  }
  for (const auto& r : queue)
    if (r->seq != -1 || r->n_eval != 0) return fail("a queued request holds a sequence");
  for (const KvGroup& g : s->groups) {
    const runtime::BlockPool& gp = *g.pool;
    const std::string what = g.window > 0 ? "sliding-window pool: " : "";
    if (auto st = gp.check(); !st) return st;
    std::vector<int32_t> refs(static_cast<size_t>(gp.n_blocks()), 0);
    if (g.window > 0) refs[KvGroup::kNullBlock] = 1;  // the session's own
    for (const auto& r : running) {
      const runtime::SequenceBlocks& sb = g.seqs[static_cast<size_t>(r->seq)];
      if (sb.size() != r->n_eval)
        return fail(fmt::format("{}sequence {} caches {} tokens, its request counts {}", what, r->seq,
                                sb.size(), r->n_eval));
      if (!std::equal(sb.tokens().begin(), sb.tokens().end(), r->tokens.begin()))
        return fail(fmt::format("{}sequence {} caches tokens other than its request's", what, r->seq));
      if (static_cast<int64_t>(sb.blocks().size()) * block < sb.size())
        return fail(fmt::format("{}sequence {}: {} blocks cannot hold {} tokens", what, r->seq,
                                sb.blocks().size(), sb.size()));
      // A windowed table holds the blocks its last query's window reaches, never fewer.
      if (g.window > 0 && sb.first_live() * block > std::max<int64_t>(0, sb.size() - g.window + 1))
        return fail(fmt::format("{}sequence {} gave back a block its window still sees", what, r->seq));
      const auto live = sb.blocks().subspan(static_cast<size_t>(sb.first_live()));
      for (int32_t b : live) ++refs[static_cast<size_t>(b)];
    }
    for (size_t id = 0; id < n_ids; ++id)
      if (!held[id] && (!g.seqs[id].blocks().empty() || (id < id_used.size() && id_used[id])))
        return fail(fmt::format("{}sequence id {} holds blocks or is marked used with no request", what, id));
    for (int32_t b = 0; b < gp.n_blocks(); ++b)
      if (refs[static_cast<size_t>(b)] != gp.refcount(b))
        return fail(fmt::format("{}block {}: refcount {}, the block tables reference it {} times", what, b,
                                gp.refcount(b), refs[static_cast<size_t>(b)]));
  }
  return {};
}

void Engine::Impl::fail_all(const Error& e) {
  entries.clear();
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
      const Status st = verify();
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
  if (internal::Access::impl(*model).options.kv_storage != KvStorage::Paged)
    return make_error(
        ErrorCode::Unsupported,
        "engine: needs the paged KV cache (LoadOptions.kv_storage = Paged): requests come and go "
        "and share prefixes by blocks");
  if (options.max_running < 0 || options.max_running > info.n_seq_max)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("engine: max_running {} outside [0, {}] (0: the model's n_seq_max {})",
                                  options.max_running, info.n_seq_max, info.n_seq_max));
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
  if (impl->opt.max_running == 0) impl->opt.max_running = static_cast<int32_t>(info.n_seq_max);
  if (impl->opt.step_tokens == 0) impl->opt.step_tokens = info.n_batch;
  auto session = model->new_session();
  if (!session) return session.error();
  impl->session = std::move(*session);
  impl->model = std::move(model);
  impl->s = &internal::Access::impl(*impl->session);
  impl->pool = impl->s->groups[0].pool.get();
  impl->block = impl->pool->block_size();
  impl->pool_rows = int64_t{impl->pool->n_blocks()} * impl->block;
  impl->watermark_tokens =
      static_cast<int64_t>(static_cast<double>(impl->opt.admit_watermark) * impl->pool->n_blocks()) *
      impl->block;
  impl->vocab = info.vocab_size;
  impl->id_used.assign(static_cast<size_t>(impl->opt.max_running), 0);
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
