#pragma once
// Recurrent layers (Mamba-style SSMs, LFM2's short convolutions, Qwen 3.5's Gated DeltaNet) keep a
// fixed-size state per sequence (a conv window, an SSM or DeltaNet state) that cannot be paged or
// shared by rows. Each sequence owns one live slot; a prefix can be resumed only from a copy of the
// state taken where that prefix ended. RecurrentSlots keeps those copies: checkpoints keyed by the
// prefix's chain hash (the key the attention blocks publish, kv/blocks.h, identity included), taken at
// block boundaries and evicted least recently used first.
//
// Slots (the state tensors' first dimension): [0, n_seq) live, one per sequence id; then the
// checkpoints; then one slot of zeros nobody writes, copied into a live slot to start it afresh.
#include <cstdint>
#include <optional>
#include <vector>

#include "glass/result.h"

namespace glass::kv {

struct SlotCopy {
  int32_t src = 0, dst = 0;
};

class RecurrentSlots {
 public:
  RecurrentSlots(int32_t n_seq, int32_t n_checkpoints);

  static int32_t slots_for(int32_t n_seq, int32_t n_checkpoints) { return n_seq + n_checkpoints + 1; }
  int32_t n_slots() const { return slots_for(n_seq_, n_checkpoints_); }
  int32_t live(int32_t seq) const { return seq; }
  int32_t zero() const { return n_seq_ + n_checkpoints_; }

  // After a step left seq's live state at the end of the prefix `key`: the copy that keeps it, or
  // nothing when a checkpoint holds that key already (it becomes the most recently used) or the
  // store has no room at all.
  std::optional<SlotCopy> save(int32_t seq, uint64_t key);
  bool contains(uint64_t key) const;
  // The copy that puts checkpoint `key` into seq's live slot (contains(key) must hold).
  SlotCopy restore(int32_t seq, uint64_t key);
  // The copy that starts seq's live state from zeros.
  SlotCopy reset(int32_t seq) const { return {zero(), live(seq)}; }

  int32_t n_held() const;
  Status check() const;

 private:
  int32_t find(uint64_t key) const;

  int32_t n_seq_, n_checkpoints_;
  std::vector<uint64_t> key_;   // per checkpoint
  std::vector<uint64_t> used_;  // per checkpoint: the tick it was last saved or restored; 0: empty
  uint64_t tick_ = 0;
};

}  // namespace glass::kv
