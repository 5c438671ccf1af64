#include "runtime/scheduler.h"

#include <fmt/format.h>

#include <algorithm>

namespace glass::runtime {

void StepBatch::clear() {
  entries.clear();
  finished.clear();
  admitted.clear();
  preempted = 0;
  prefix_hit_tokens = 0;
}

namespace {

// One call's working set: the state, the sequence state, the batch being built.
struct Planner {
  SchedulerState& st;
  kv::State& kv;
  StepBatch& out;

  const SchedulePolicy& policy;

  // A prompt chunk of n tokens cut back to the last block boundary it crosses (checkpoint_every).
  int64_t aligned(const Request& r, int64_t n) const {
    const int64_t B = policy.checkpoint_every;
    if (B <= 0 || r.pending() <= 1) return n;
    const int64_t end = r.n_eval + n, boundary = end / B * B;
    return end % B != 0 && boundary > r.n_eval ? boundary - r.n_eval : n;
  }

  // Rows r can take this step without preempting: the free (or evictable) blocks, plus what is
  // left of its own last block.
  int64_t room(const Request& r) const { return kv.room(r.seq); }

  // Reserves up to n more tokens of r (aligned) and adds them to the batch; how many, 0 on failure.
  int64_t take(Request& r, int64_t n) {
    n = aligned(r, n);
    if (auto s = kv.reserve(r.seq, r.n_eval + n); !s) {
      r.error = make_error(ErrorCode::Internal, "engine: " + s.error().message);  // room() said it fits
      return 0;
    }
    out.entries.push_back({&r, n});
    return n;
  }

  void finish_running(size_t i) {
    std::unique_ptr<Request> r = std::move(st.running[i]);
    st.running.erase(st.running.begin() + static_cast<ptrdiff_t>(i));
    kv.release(r->seq);
    st.id_used[static_cast<size_t>(r->seq)] = 0;
    r->seq = -1;
    out.finished.push_back(std::move(r));
  }

  // The most recently admitted sequence gives its blocks back and waits at the front of the queue
  // with everything it generated as its prompt; its SequenceGen (sampler and RNG state, text) goes
  // with it, so it continues exactly where it stopped. Returns the tokens it had in this step.
  int64_t preempt_newest() {
    std::unique_ptr<Request> v = std::move(st.running.back());
    st.running.pop_back();
    int64_t had = 0;
    for (const StepEntry& e : out.entries)
      if (e.r == v.get()) had += e.n;
    out.entries.erase(std::remove_if(out.entries.begin(), out.entries.end(),
                                     [&](const StepEntry& e) { return e.r == v.get(); }),
                      out.entries.end());
    kv.release(v->seq);
    st.id_used[static_cast<size_t>(v->seq)] = 0;
    v->seq = -1;
    v->n_eval = 0;
    ++v->preemptions;
    ++out.preempted;
    st.queue.push_front(std::move(v));
    return had;
  }
};

}  // namespace

void schedule(SchedulerState& st, kv::State& kv, const SchedulePolicy& policy, StepBatch& out) {
  out.clear();
  Planner p{st, kv, out, policy};
  int64_t budget = policy.step_tokens;
  for (int phase = 0; phase < 2; ++phase) {
    for (size_t i = 0; i < st.running.size() && budget > 0; ++i) {
      Request& r = *st.running[i];
      if ((r.pending() == 1) != (phase == 0)) continue;
      const int64_t want = std::min(r.pending(), budget);
      while (true) {
        if (const int64_t n = std::min(want, p.room(r)); n > 0) {
          if (const int64_t taken = p.take(r, n); taken > 0)
            budget -= taken;
          else
            p.finish_running(i--);
          break;
        }
        if (st.running.size() == 1) {
          // Alone, with every block its own: the pool cannot hold it, and generate alone would
          // stop here too.
          p.finish_running(i--);
          break;
        }
        const bool self = st.running.back().get() == &r;
        budget += p.preempt_newest();  // its tokens in this step go back to the budget
        if (self) break;
      }
    }
  }
  while (budget > 0 && static_cast<int32_t>(st.running.size()) < policy.max_running && !st.queue.empty()) {
    Request& r = *st.queue.front();
    const auto id =
        static_cast<int32_t>(std::find(st.id_used.begin(), st.id_used.end(), 0) - st.id_used.begin());
    const int64_t matched = policy.prefix_cache ? kv.match_prefix(id, r.tokens) : 0;
    const int64_t want = std::min(static_cast<int64_t>(r.tokens.size()) - matched, budget);
    const int64_t fits = kv.room(id);
    if (!st.running.empty() && (fits < want || fits - want < policy.watermark_tokens)) {
      kv.release(id);
      break;
    }
    std::unique_ptr<Request> owned = std::move(st.queue.front());
    st.queue.pop_front();
    st.id_used[static_cast<size_t>(id)] = 1;
    r.seq = id;
    r.n_eval = matched;
    r.prefix_hits += matched;
    out.prefix_hit_tokens += matched;
    out.admitted.push_back(&r);
    st.running.push_back(std::move(owned));
    const int64_t taken = std::min(want, fits) > 0 ? p.take(r, std::min(want, fits)) : 0;
    if (taken <= 0) {
      p.finish_running(st.running.size() - 1);  // alone it does not fit either
      continue;
    }
    budget -= taken;
  }
}

Status check_schedule(const SchedulerState& st, const kv::State& kv, const SchedulePolicy& policy) {
  auto fail = [](const std::string& what) { return make_error(ErrorCode::Internal, "engine: " + what); };
  if (static_cast<int32_t>(st.running.size()) > policy.max_running)
    return fail(fmt::format("{} sequences run, max_running is {}", st.running.size(), policy.max_running));
  const auto n_ids = static_cast<size_t>(kv.n_seq());
  std::vector<uint8_t> held(n_ids, 0);
  for (const auto& r : st.running) {
    if (r->seq < 0 || r->seq >= static_cast<int32_t>(n_ids) || held[static_cast<size_t>(r->seq)])
      return fail(fmt::format("a running request holds sequence id {}, invalid or shared", r->seq));
    held[static_cast<size_t>(r->seq)] = 1;
    if (static_cast<size_t>(r->seq) >= st.id_used.size() || !st.id_used[static_cast<size_t>(r->seq)])
      return fail(fmt::format("sequence id {} not marked used", r->seq));
    if (r->pending() < 1) return fail(fmt::format("sequence {} runs with no pending token", r->seq));
    const std::span<const int32_t> cached = kv.tokens(r->seq);
    if (kv.length(r->seq) != r->n_eval)
      return fail(fmt::format("sequence {} caches {} tokens, its request counts {}", r->seq,
                              kv.length(r->seq), r->n_eval));
    if (!std::equal(cached.begin(), cached.end(), r->tokens.begin()))
      return fail(fmt::format("sequence {} caches tokens other than its request's", r->seq));
  }
  for (const auto& r : st.queue)
    if (r->seq != -1 || r->n_eval != 0) return fail("a queued request holds a sequence");
  for (size_t id = 0; id < n_ids; ++id)
    if (!held[id] && (kv.holds(static_cast<int32_t>(id)) || (id < st.id_used.size() && st.id_used[id])))
      return fail(fmt::format("sequence id {} holds blocks or is marked used with no request", id));
  return kv.check();
}

}  // namespace glass::runtime
