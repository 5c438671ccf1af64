#pragma once
// A Session's state: the KV cache (the graph's state tensors), the step input buffers and one
// workspace per plan, all allocated once. Several sequences may share it (batched generation):
// each cache row records its position and sequence, and attention only sees rows of its own
// sequence, so one plan call can advance every live sequence.
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/model_impl.h"

namespace glass {

// One compiled plan as a session drives it: its workspace and step arguments, whose buffers
// point at the session's inputs, states and logits.
struct BoundPlan {
  std::shared_ptr<backend::Plan> plan;
  std::unique_ptr<backend::Workspace> workspace;
  backend::StepArgs args;
  backend::StepStats stats;
  std::vector<models::StateKind> kinds;  // per state in args.states
};

// The state tensors (KV caches, their positions) in one zeroed anonymous mapping, 2 MiB-aligned and
// advised onto transparent huge pages: decode attention streams over the caches every step, and on
// 4 KiB pages the hardware prefetchers stop at every page (glass_attention_bench read a cold f32
// cache 20-30% faster from huge pages).
class StateMemory {
 public:
  StateMemory() = default;
  StateMemory(const StateMemory&) = delete;
  StateMemory& operator=(const StateMemory&) = delete;
  ~StateMemory();
  // Lays out tensors of the given byte sizes, 64-byte aligned; false when the memory is not there.
  bool allocate(const std::vector<size_t>& bytes);
  void* operator[](size_t i) const { return at_[i]; }

 private:
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  std::vector<void*> at_;
};

struct Session::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl* m = nullptr;
  StateMemory states;
  std::map<std::string, size_t> state_index;
  std::vector<int32_t> tokens, positions, seq_ids, slots;  // n_batch each
  std::vector<int32_t> output_rows;                        // n_batch: the rows whose logits are computed
  std::vector<float> logits;                               // n_batch x vocab
  std::vector<float> last;                                 // vocab: last row of the last eval
  std::vector<int64_t> seq_pos;                            // next position of each sequence
  std::vector<int32_t> zeros;                              // sequence ids of single-sequence evals
  BoundPlan prefill, decode;
  SessionStats stats;
  backend::OpProfile profile;    // Session::set_profiling
  int64_t n_rows = 0;            // cache rows in use (rows are handed out in order; reset() frees them all)
  std::vector<int32_t> history;  // ids in rows [0, n_rows) of single-sequence evals (Session::eval)

  Status bind(BoundPlan& bp, int64_t max_t);
  // Evaluates tokens[i] of sequence seqs[i] at that sequence's next position; `out` (when not
  // empty) receives one row of logits per token. Without `out` only the last token's logits are
  // computed (into `last`). Splits into n_batch chunks.
  Status eval_tokens(std::span<const int32_t> tokens, std::span<const int32_t> seqs, std::span<float> out);
  Status run_chunk(std::span<const int32_t> chunk, std::span<const int32_t> seqs, std::span<float> out);
  int64_t position(int32_t seq) const;
};

}  // namespace glass
