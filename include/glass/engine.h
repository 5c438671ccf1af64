#pragma once
// glass::Engine: a thread-safe continuous-batching server over one Model.
//
//   auto engine = glass::Engine::create(model, {});
//   auto handle = (*engine)->submit({.prompt = ids, .config = cfg});
//   while (auto piece = (*handle)->next_piece()) fputs(piece->c_str(), stdout);
//   auto result = (*handle)->wait();
//
// One loop thread owns one Session whose KV cache all requests share (paged, or dense: each running
// sequence its fixed run of rows, no prefix sharing). Requests wait in a FIFO
// queue; each step evaluates one batch: a decode token for every running sequence, then prompt chunks
// of the sequences still prefilling, under a token budget. A finished request's full blocks stay in the
// prefix cache, so a later prompt starting with the same tokens skips evaluating them. When the pool
// runs out of blocks the most recently admitted sequence is preempted: its blocks go back and it
// waits at the front of the queue to recompute them, its sampler state kept. Whatever else runs,
// a request gets the tokens `generate` gives it alone in a fresh session with the same config.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "glass/llm.h"

namespace glass {

struct EngineOptions {
  // Sequences advanced together; 0 = the session's n_seq_max (dense storage: at most the sequences
  // its kv_size holds full-length runs of rows for).
  int32_t max_running = 0;
  int32_t max_queued = 256;  // waiting requests (preempted ones included) past which submit is busy
  // Tokens one step evaluates (decodes + prompt chunks), at most n_batch: one plan call per step; 0 =
  // n_batch. When it is less than the sequences decoding, the newest of them skip a step.
  int64_t step_tokens = 0;
  bool prefix_cache = true;  // reuse the cached full blocks of earlier prompts; false: evaluate every prompt
  // A request waiting is admitted beside running ones only when the blocks left after its first chunk
  // are at least this fraction of the pool (vLLM's watermark, floor of fraction x blocks): the running
  // sequences keep room to grow instead of being preempted as soon as they need a block. In [0, 1).
  float admit_watermark = 0.01f;
  // The KV cache the engine's session holds: pool size, block size, sequences, storage, cache type,
  // batch invariance (unset fields: the model's LoadOptions).
  SessionOptions session;
};

struct EngineRequest {
  std::vector<int32_t> prompt;  // token ids; not empty
  GenerateConfig config;        // config.cancel, when set, is the flag RequestHandle::cancel sets
  // Optional: runs on the engine thread once the result is ready (done() is true, wait() returns at
  // once), after the last piece. A reader that waits on its own queue of pieces learns of the end here
  // instead of polling done(). It must not block; what it throws is dropped.
  std::function<void()> on_finished;
};

// A submitted request. Pieces arrive twice: through the submit callback (on the engine thread) and
// through next_piece; both see the same pieces, and together they make up the result's text (unlike
// generate, the text held back by the detokenizer or a stop string is delivered when the request ends
// early). Pieces wait for next_piece until taken (at most the result's text). Handles may outlive their
// engine. Every member may be called from any thread; from a piece callback, only those that do not
// block (cancel, done, info: the engine thread cannot wait for itself).
//
// The result's timings: prompt_ms from the request's first admission to its prompt's last chunk, ttft_ms
// from submit to the first token, decode_ms from the prompt's end to the request's; counters.kv_rows_written
// counts the rows of this request's tokens (recomputed ones after a preemption included).
class RequestHandle {
 public:
  struct State;
  explicit RequestHandle(std::shared_ptr<State> state);
  ~RequestHandle();
  RequestHandle(const RequestHandle&) = delete;
  RequestHandle& operator=(const RequestHandle&) = delete;

  // Asks the engine to end the request: it finishes with FinishReason::Cancelled at the next step
  // boundary, keeping what it generated so far.
  void cancel();
  bool done() const;
  // Blocks until the request finishes. Cancelled requests are results (finish Cancelled), not errors.
  Result<GenerateResult> wait();
  // Blocks for the next piece of text; nullopt once the request finished and every piece was taken.
  std::optional<std::string> next_piece();

  // How the engine served the request so far (final once done()).
  struct Info {
    int64_t prefix_hit_tokens = 0;  // tokens taken from the prefix cache instead of evaluated, all admissions
    int32_t preemptions = 0;        // times the request lost its blocks to an older one and recomputed
  };
  Info info() const;

 private:
  std::shared_ptr<State> state_;
};

class Engine {
 public:
  // Errors: options out of range (InvalidArgument naming the field; max_running past what a dense
  // cache holds).
  static Result<std::unique_ptr<Engine>> create(std::shared_ptr<const Model> model,
                                                const EngineOptions& options = {});
  // Stops the loop after its current step; the requests left finish Cancelled. A piece callback
  // still blocked at that point delays this until it returns.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. on_piece runs on the engine thread; returning false cancels the request, and a
  // callback that throws ends it with an Internal error. Errors: InvalidArgument for an empty prompt,
  // an id outside the vocabulary, a prompt longer than n_ctx or than the KV pool, a bad config;
  // CapacityExceeded with a message starting "engine: busy" when max_queued requests wait already (try
  // again later).
  Result<std::shared_ptr<RequestHandle>> submit(EngineRequest request, PieceCallback on_piece = {});

  struct Stats {
    int64_t queued = 0;             // waiting, preempted ones included
    int64_t running = 0;            // holding a sequence id
    int64_t completed = 0;          // finished, whatever the reason
    int64_t cancelled = 0;          // of those, finished Cancelled
    int64_t preempted = 0;          // preemptions so far
    int64_t prefix_hit_tokens = 0;  // tokens taken from the prefix cache instead of evaluated
    int64_t blocks_used = 0;        // KV blocks referenced by running sequences
    int64_t blocks_free = 0;        // allocatable now (free, or cached and unreferenced)
    int64_t blocks_cached = 0;      // holding a published prefix, referenced or not
    int64_t blocks_total = 0;       // the pool's blocks (full-attention layers' pool)
    int64_t block_size = 0;         // token rows per block
    int64_t steps = 0;              // plan calls made
  };
  // A snapshot taken between steps; consistent with every result already delivered.
  Stats stats() const;

  // For tests: runs on the loop thread between steps and verifies the KV pool (BlockPool::check)
  // and that the sequences' block tables account for every reference. Blocks while a step runs.
  Status check_invariants();

  struct Impl;

 private:
  explicit Engine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace glass
