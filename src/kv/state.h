#pragma once
// The state a session's sequences carry between steps, behind one interface: which cache rows hold
// each sequence's tokens in every group of layers, the prefix index that lets a later prompt reuse
// them, and the step inputs (slots, block tables) a plan call reads. Host bookkeeping only: the
// tensors live with the session, which applies the row copies this module asks for.
//
// Groups: [0] the full-attention layers' pool; further groups are sliding-window layers, whose
// sequences give back the blocks out of every later query's window, and recurrent layers, whose
// fixed-size state per sequence lives in a slot and is checkpointed at block boundaries
// (kv/recurrent.h), so a prefix hit or a roll back restores it instead of recomputing it.
// Allocation is a policy of the same pools: Paged takes blocks as a sequence grows and shares
// published prefixes; Fixed (dense storage) gives sequence s the blocks [s * max_blocks,
// (s + 1) * max_blocks) for good.
//
// A step: prepare each sequence the step extends (its blocks reserved, shared blocks it will write
// replaced, its block-table rows filled), slot() for each token's row, apply the owed row copies,
// run the plan, commit the tokens, finish_step. Between steps: match_prefix, truncate (roll back),
// fork, release. Every operation that moves state between rows or slots appends the copy to owed(),
// which the owner of the tensors applies, in order, before the next plan call writes anything.
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "glass/result.h"
#include "kv/blocks.h"
#include "kv/recurrent.h"

namespace glass::kv {

enum class Allocation : uint8_t { Paged, Fixed };
enum class GroupKind : uint8_t { Attention, Recurrent };

// One pool of cache rows, as a group of layers declares it and the session sizes it.
struct GroupSpec {
  int64_t rows = 0;  // a multiple of block_size
  int64_t block_size = 16;
  int64_t max_blocks = 0;  // the most blocks one sequence's table holds (n_ctx / block_size, rounded up)
  int64_t window = 0;      // > 0: the layers see the last `window` positions only
  // Recurrent: rows are state slots (block_size 1): n_seq live ones, then checkpoints, then a slot
  // of zeros (RecurrentSlots::slots_for); checkpoints are taken where group 0's blocks end.
  GroupKind kind = GroupKind::Attention;
};

struct StateSpec {
  std::vector<GroupSpec> groups;  // [0]: full attention
  int32_t n_seq = 1;              // sequence ids [0, n_seq)
  int64_t n_batch = 1;            // the most tokens one step holds
  Allocation allocation = Allocation::Paged;
  uint64_t salt = 0;  // what every block's contents depend on beside its tokens: model, cache types
};

// Rows [0, rows) of block src go to block dst in every tensor of group `group` (recurrent groups:
// slot src to slot dst).
struct RowCopy {
  int32_t group = 0;
  int32_t src = 0, dst = 0;
  int64_t rows = 0;
};

// A group's step inputs: the row each token of the step writes, and every sequence's block table
// (n_seq rows of max_blocks entries; -1 past a paged table's end). Recurrent groups: slots holds
// each sequence id's live slot, and there is no table.
struct StepInputs {
  std::vector<int32_t> slots;
  std::vector<int32_t> block_tables;
};

struct PoolCounts {
  int64_t used = 0, free = 0, cached = 0;
};

// A windowed pool's block 0 stays zero and referenced: the given-back entries of its tables name it.
inline constexpr int32_t kNullBlock = 0;

class State {
 public:
  // Errors: a spec out of range (InvalidArgument, naming the field).
  static Result<std::unique_ptr<State>> create(const StateSpec& spec);

  const StateSpec& spec() const { return spec_; }
  size_t n_groups() const { return groups_.size(); }
  int32_t n_seq() const { return spec_.n_seq; }
  // Sequence ids that can hold tokens: all of them when paged; with Fixed, those whose blocks the
  // pool has.
  int32_t n_seq_usable() const;
  // The most tokens one sequence can hold: the pool (paged) or its fixed run of rows.
  int64_t sequence_capacity() const;

  int64_t length(int32_t seq) const;
  std::span<const int32_t> tokens(int32_t seq) const;
  // Whether the sequence holds tokens or blocks.
  bool holds(int32_t seq) const;

  // For an empty sequence: the identity its blocks' keys chain from (an adapter or control vector
  // and its scale; 0: none), so rows made under another identity are never shared.
  void set_identity(int32_t seq, uint64_t identity);
  // Tokens the sequence can grow by now without taking blocks other sequences hold.
  int64_t room(int32_t seq) const;
  // Makes every group's table of seq cover n_total tokens; on failure nothing is kept.
  Status reserve(int32_t seq, int64_t n_total);
  // For an empty sequence: takes the prompt's cached leading blocks in every group and returns the
  // tokens they cover (at least one token is left to evaluate); with recurrent groups, only as far
  // as a checkpoint of theirs reaches, which it restores. 0 with Fixed allocation.
  int64_t match_prefix(int32_t seq, std::span<const int32_t> tokens);
  // What match_prefix would take for this prompt now, without taking it: 0 where a windowed or
  // recurrent group may hold less than the full-attention blocks, and with Fixed allocation.
  int64_t cached_prefix(std::span<const int32_t> tokens, uint64_t identity = 0) const;

  // Before a step writes n_new tokens of seq at its end: its blocks reserved in every group, shared
  // blocks in the write range replaced (their rows owed), its block-table rows filled; a sequence
  // starting at 0 has its recurrent slots zeroed. CapacityExceeded names the pool.
  Status prepare(int32_t seq, int64_t n_new);
  // The cache row of group g holding position pos of seq (after prepare).
  int32_t slot(size_t g, int32_t seq, int64_t pos) const;
  StepInputs& step(size_t g) { return steps_[g]; }
  // After the plan wrote their rows: records tokens at the end of seq (publishing full blocks).
  void commit(int32_t seq, std::span<const int32_t> tokens);
  // After a step's commits: windowed groups give back the blocks no later query of seq sees; at a
  // block boundary recurrent groups checkpoint seq's state.
  void finish_step(int32_t seq);

  // Keeps at most the first n tokens of seq (roll back) and returns how many it kept: fewer when a
  // windowed group no longer holds the window a query at n sees, or a recurrent group has no
  // checkpoint at n (it restores the latest below; the caller evaluates the rest again).
  int64_t truncate(int32_t seq, int64_t n);
  // For an empty dst: holds what src holds, sharing its blocks until either writes into them
  // (copy-on-write). Fixed allocation copies the rows; recurrent slots are copied.
  Status fork(int32_t src, int32_t dst);
  void release(int32_t seq);
  void release_all();

  // The row and slot copies the operations so far asked for, in order; paid() once applied.
  const std::vector<RowCopy>& owed() const { return owed_; }
  void paid() { owed_.clear(); }

  PoolCounts counts(size_t g = 0) const;
  const BlockPool& pool(size_t g) const { return *groups_[g].pool; }
  // Sequence seq's table in group g (paged).
  const SequenceBlocks& blocks(size_t g, int32_t seq) const {
    return groups_[g].seqs[static_cast<size_t>(seq)];
  }
  // Every pool's own invariants, and every block's refcount equal to the references of the tables.
  Status check() const;

 private:
  struct Group {
    GroupSpec spec;
    std::unique_ptr<BlockPool> pool;
    std::vector<SequenceBlocks> seqs;     // per sequence id (paged attention)
    std::unique_ptr<RecurrentSlots> rec;  // recurrent groups
    bool windowed() const { return spec.kind == GroupKind::Attention && spec.window > 0; }
    bool recurrent() const { return spec.kind == GroupKind::Recurrent; }
  };
  explicit State(const StateSpec& spec) : spec_(spec) {}
  bool paged() const { return spec_.allocation == Allocation::Paged; }
  bool has_recurrent() const;
  // The longest prefix of seq, at most n tokens, whose end every recurrent group holds a
  // checkpoint of (a block boundary; 0 when none).
  int64_t checkpointed(int32_t seq, int64_t n) const;
  // Truncates the attention groups to at most n and returns what they kept.
  int64_t truncate_attention(int32_t seq, int64_t n);
  // Truncates to the latest checkpointed prefix at or below n and owes its restore.
  int64_t resume_recurrent(int32_t seq, int64_t n);

  StateSpec spec_;
  std::vector<Group> groups_;
  std::vector<StepInputs> steps_;
  std::vector<std::pair<int32_t, int32_t>> pairs_;  // prepare's scratch
  std::vector<RowCopy> owed_;
  // Fixed allocation: per sequence id, its tokens.
  std::vector<std::vector<int32_t>> fixed_tokens_;
};

}  // namespace glass::kv
