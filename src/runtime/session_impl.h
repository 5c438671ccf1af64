#pragma once
// A Session's state: the KV cache pool (the graph's state tensors), the step input buffers and one
// workspace per plan, all allocated once. Several sequences may share it (batched generation):
// each has its own block table (runtime/kv_blocks.h) naming the pool's blocks holding its rows, and
// attention reads each query's own sequence through its table, so one plan call can advance every
// live sequence and a finished one gives its blocks back.
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/kv_blocks.h"
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

// One pool of KV cache rows and each sequence's block table into it: the full-attention layers'
// (group 0), or the sliding-window layers' (group 1, when the model has them), whose sequences give
// back the blocks out of every later query's window.
struct KvGroup {
  models::CacheGeometry cache;
  int64_t window = 0;  // 0: the full-attention pool
  std::unique_ptr<runtime::BlockPool> pool;
  std::vector<runtime::SequenceBlocks> seqs;  // per sequence id (paged)
  std::vector<int32_t> slots;                 // n_batch: the cache rows the step writes
  std::vector<int32_t> block_tables;          // n_seq x max_blocks: the step's block tables
  std::vector<size_t> states;                 // this pool's tensors, indices into Impl::states
  // A windowed pool's block 0 stays zero and referenced: the given-back entries of its tables name it.
  static constexpr int32_t kNullBlock = 0;
};

struct Session::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl* m = nullptr;
  StateMemory states;
  std::map<std::string, size_t> state_index;
  std::vector<size_t> state_row_bytes;              // per state: bytes of one cache row
  std::vector<int32_t> tokens, positions, seq_ids;  // n_batch each
  std::vector<int32_t> output_rows;                 // n_batch: the rows whose logits are computed
  std::vector<float> last;                          // vocab: last row of the last eval
  models::CacheGeometry cache;                      // groups[0]'s: the pool's rows, n_seq, max_blocks
  KvStorage storage = KvStorage::Paged;
  std::vector<KvGroup> groups;     // [0] full attention, [1] sliding window (when the model has it)
  std::vector<int64_t> dense_len;  // per sequence id (dense): tokens cached
  // Per sequence id, an eval's bookkeeping: tokens in the chunk, the next position to assign, the
  // index of the call's last token.
  std::vector<int64_t> chunk_new, next_pos, last_index;
  std::vector<std::pair<int32_t, int32_t>> copies;
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
  int64_t length(int32_t seq) const;
  // Paged: the tokens sequence seq (holding n_cached) can grow by without taking blocks other
  // sequences hold, in every pool.
  int64_t room(int32_t seq, int64_t n_cached) const;
  // Paged: makes every pool's table of seq cover n_total tokens.
  Status reserve(int32_t seq, int64_t n_total);
  // Paged, for an empty sequence: takes the prompt's cached leading blocks (in every pool) and
  // returns the tokens they cover (at least one token is left to evaluate).
  int64_t match_prefix(int32_t seq, std::span<const int32_t> tokens);
  // Gives back a sequence's cache rows (its blocks return to the pools).
  void release(int32_t seq);
  void release_all();
  // Keeps at most the first n positions of a sequence and returns how many it kept: fewer when
  // the sliding-window pool no longer holds the window before position n (the caller evaluates
  // the rest again).
  int64_t truncate(int32_t seq, int64_t n);
  // Copies the first n rows of block src to block dst in every K/V state of group g (copy-on-write).
  void copy_rows(const KvGroup& g, int32_t src, int32_t dst, int64_t n);
};

}  // namespace glass
