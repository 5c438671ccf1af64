#pragma once
// A Session's state: the KV cache tensors (the graph's states), the step input buffers and one
// workspace per plan, all allocated once. Which rows hold which sequence's tokens is the sequence
// state's (kv/state.h): several sequences may share the pools (batched generation), attention reads
// each query's own sequence through its block table, so one plan call can advance every live
// sequence and a finished one gives its blocks back.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kv/state.h"
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

// Which tokens of an eval give logits: every one, or the last of each sequence the call names.
enum class LogitRows { All, LastOfEachSequence };

struct Session::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl* m = nullptr;
  std::shared_ptr<const ShapedGraph> shape;  // the model's graph for this session's cache shape
  bool batch_invariant = false;
  StateMemory states;
  std::map<std::string, size_t> state_index;
  std::vector<size_t> state_row_bytes;              // per state: bytes of one cache row
  std::vector<int32_t> tokens, positions, seq_ids;  // n_batch each
  std::vector<int32_t> output_rows;                 // n_batch: the rows whose logits are computed
  std::vector<float> last;                          // vocab: last row of the last eval
  std::unique_ptr<kv::State> kv;                    // which rows hold each sequence's tokens
  graph::Bindings sizes;  // the pools' symbols (C, W, N, M) as this session sized them
  std::vector<std::vector<size_t>> group_states;  // per kv group: its tensors, indices into states
  // Per sequence id, an eval's bookkeeping: tokens in the chunk, the next position to assign, the
  // index of the call's last token.
  std::vector<int64_t> chunk_new, next_pos, last_index;
  BoundPlan prefill, decode;
  SessionStats stats;
  backend::OpProfile profile;       // Session::set_profiling
  std::vector<int32_t> history;     // ids of sequence 0, in order (Session::eval)
  std::vector<int32_t> chunk_seq0;  // zeros: the sequence ids of Session::eval
  // Session::set_capture (runtime/session_capture.cpp): the graph with the captured nodes as extra
  // outputs (none: the model's graph), per capture its node, one plan call's rows and the eval's.
  std::optional<graph::Graph> capture_graph;
  uint64_t capture_hash = 0;
  std::vector<graph::NodeId> capture_nodes;
  std::vector<std::vector<float>> capture_step;
  std::vector<Session::Captured> captured;

  Status bind(BoundPlan& bp, int64_t max_t);
  // An eval call starts its captures empty; each plan call appends its rows (n_out logits rows).
  void begin_captures();
  void keep_captures(const graph::Bindings& bind, int64_t n_out);
  // Evaluates tokens[i] of sequence seqs[i] at that sequence's next position. `out` receives one
  // row of logits per token that `rows` names, in token order: every token, or the last of each
  // sequence. Splits into n_batch chunks; nothing else is computed or copied.
  Status eval_tokens(std::span<const int32_t> tokens, std::span<const int32_t> seqs, LogitRows rows,
                     std::span<float> out);
  Status run_chunk(std::span<const int32_t> chunk, std::span<const int32_t> seqs, size_t first_index,
                   LogitRows rows, float* out, int64_t* n_out);
  int64_t length(int32_t seq) const { return kv->length(seq); }
  // Applies the row copies the sequence state owes, to every tensor of their groups, in order.
  void pay_copies();
};

}  // namespace glass
