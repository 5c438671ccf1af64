#pragma once
// How big a session's pools are. The runtime's choice, from what the session asks for and what the
// model declares (its context, its sliding window, its block size), never the model's: a model's
// graph names the pools' sizes as symbols (C, W, N, M: graph/shape.h) bound per session.
#include <cstdint>

#include "kv/state.h"

namespace glass::kv {

// The most sequence ids a session holds (llama.cpp's is 256): each costs a block-table row of the
// step inputs and its bookkeeping, whatever it holds.
inline constexpr int64_t kMaxSequences = 65536;

struct PoolRequest {
  int64_t n_ctx = 0;        // positions one sequence may reach
  int64_t block_size = 16;  // rows per block (the model's graph is built for it)
  int64_t kv_size = 0;      // rows of the full-attention pool; 0 = n_ctx
  int64_t n_seq_max = 64;   // sequence ids
  int64_t kv_size_window =
      0;                   // the windowed pool's rows; 0 = n_seq_max windows and one step, at most kv_size
  int64_t n_batch = 0;     // the caller's most tokens per step (0: the default); sizes the windowed pool
  int64_t window = 0;      // the model's sliding window; 0: no windowed layers
  bool dense = false;      // Fixed allocation: every pool laid out per sequence, nothing given back
  bool recurrent = false;  // the model has recurrent layers: a group of state slots
};

// Checkpoints of the recurrent states a session keeps beside the live ones (where a later prompt can
// resume): two per sequence and two more, enough for a chat's previous turns; each costs one
// sequence's recurrent state.
inline int32_t recurrent_checkpoints(int32_t n_seq) { return 2 * n_seq + 2; }

// The group index of the windowed pool and of the recurrent slots in a spec; -1 when absent.
int windowed_group(const StateSpec& s);
int recurrent_group(const StateSpec& s);

// The pools for a request: group 0 full attention, then the windowed layers' (with its null block)
// when the model has them, then the recurrent slots (live, checkpoints, zero) when it has those;
// n_seq and allocation set; n_batch and salt left to the caller.
StateSpec size_pools(const PoolRequest& r);

// The most tokens one step evaluates: the caller's n_batch (default 512), at most the larger of
// n_ctx and the pool (several sequences' tokens may share a step, never more rows than it holds).
int64_t choose_batch(int64_t requested, int64_t n_ctx, int64_t kv_rows);

}  // namespace glass::kv
