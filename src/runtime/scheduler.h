#pragma once
// The engine's scheduling policy as a plain function: from the requests running and waiting and the
// sequence state, the next step's batch. Single-threaded, no clock, no callbacks: the engine's loop
// (engine.cpp) calls it under its lock and does everything else (evaluation, sampling, delivery).
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "glass/result.h"
#include "kv/state.h"
#include "runtime/engine_request.h"

namespace glass::runtime {

struct SchedulePolicy {
  int64_t step_tokens = 1;       // the most tokens one step evaluates (one plan call)
  int32_t max_running = 1;       // sequences running at once (sequence ids [0, max_running))
  int64_t watermark_tokens = 0;  // admitting leaves this many tokens of the pool free while others run
  bool prefix_cache = true;      // admissions take the prompt's cached leading blocks
  // > 0 (a model with recurrent state: the full-attention pool's block size): a prompt chunk that
  // would end inside a block it did not start in ends at that block's start instead, so the step
  // leaves the recurrent state where a block ends, which is where it is checkpointed (kv/recurrent.h)
  // and where a later prompt sharing the prefix resumes; the rest comes in the next step.
  int64_t checkpoint_every = 0;
};

// What the loop keeps between steps, as the scheduler sees it.
struct SchedulerState {
  std::vector<std::unique_ptr<Request>> running;  // in admission order
  std::deque<std::unique_ptr<Request>> queue;     // waiting, first come first
  std::vector<uint8_t> id_used;                   // per sequence id: held by a running request
};

struct StepEntry {
  Request* r = nullptr;
  int64_t n = 0;  // tokens of r this step evaluates: r->tokens[r->n_eval, r->n_eval + n)
};

struct StepBatch {
  std::vector<StepEntry> entries;                  // in the order their tokens enter the step
  std::vector<std::unique_ptr<Request>> finished;  // did not fit even alone: they end with Length
  std::vector<Request*> admitted;                  // admitted this step (finished ones included)
  int64_t preempted = 0;                           // sequences sent back to the queue this step
  int64_t prefix_hit_tokens = 0;                   // tokens admissions took from the prefix cache
  void clear();
};

// Plans one step within policy.step_tokens. Decodes first (one pending token), then the chunks of
// sequences still prefilling, both oldest first, so a decode waits at most for one chunk per step.
// Every entry's blocks are reserved in `kv` before it is added; when the pool is short the newest
// running sequence is preempted (its blocks released, its request back at the front of the queue
// with everything generated as its prompt, to recompute). Then admissions in queue order: a request
// starts when a sequence id is free and its first chunk fits in the blocks left, keeping the
// watermark free while others run (shrunk to what fits when nothing else runs, so it never waits
// forever). `out` is cleared first.
void schedule(SchedulerState& state, kv::State& kv, const SchedulePolicy& policy, StepBatch& out);

// The invariants between steps: ids held once and marked, every running sequence's cached tokens
// its request's first n_eval, queued requests holding nothing, free ids holding no blocks, and the
// sequence state's own (kv::State::check).
Status check_schedule(const SchedulerState& state, const kv::State& kv, const SchedulePolicy& policy);

}  // namespace glass::runtime
