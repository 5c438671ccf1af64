#pragma once
// A request inside the engine (engine.cpp): what a RequestHandle shares with the loop thread, the
// request as the loop thread sees it, and how a submitted EngineRequest becomes one.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "glass/engine.h"
#include "runtime/sequence.h"

namespace glass {

// What a handle and the engine share; the handle may outlive the engine.
struct RequestHandle::State {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> pieces;
  int pullers = 0;  // threads blocked in next_piece: a piece wakes only them (wait() waits for the end)
  bool finished = false;
  std::optional<Result<GenerateResult>> result;
  std::shared_ptr<std::atomic<bool>> cancel;
  Info info;
};

namespace runtime {

using Clock = std::chrono::steady_clock;

// One request as the loop thread sees it. Heap-allocated and never moved, so the SequenceGen's
// reference to `config` and the piece callback's pointer to it stay valid.
struct Request {
  std::shared_ptr<RequestHandle::State> state;
  GenerateConfig config;
  PieceCallback on_piece;             // the submitter's
  std::function<void()> on_finished;  // the submitter's, after the result is ready
  PieceCallback piece;                // what SequenceGen calls: feeds the pull queue, then on_piece
  std::unique_ptr<runtime::SequenceGen> gen;
  // The prompt, then every generated token. The KV cache holds the first n_eval; the rest are
  // pending (one while decoding; after a preemption, everything it has to recompute).
  std::vector<int32_t> tokens;
  size_t prompt_size = 0;
  int64_t n_eval = 0;
  int32_t seq = -1;     // sequence id while running
  size_t streamed = 0;  // bytes of result text delivered as pieces
  bool callback_alive = true;
  std::optional<Error> error;
  int64_t prefix_hits = 0;
  int32_t preemptions = 0;
  uint64_t kv_rows = 0;
  bool admitted_once = false, prompt_evaluated = false, first_token = false;
  Clock::time_point submitted, admitted, prompt_done, first_token_at;

  bool cancelled() const { return config.cancel->load(); }
  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - n_eval; }
};

// What a prompt must fit: the vocabulary, the context and the KV pool.
struct RequestLimits {
  int64_t vocab = 0, n_ctx = 0, pool_rows = 0;
};

// The loop's request for `request`: its prompt checked against `limits` (InvalidArgument naming the
// field and the bound), its SequenceGen made and fed the prompt, and its piece callback, which
// feeds the handle's queue, then calls on_piece (a throw or a false return stops the calls; a
// throw is kept as the request's error).
Result<std::unique_ptr<Request>> make_request(const Model::Impl& m, EngineRequest request,
                                              PieceCallback on_piece, const RequestLimits& limits);

}  // namespace runtime
}  // namespace glass
