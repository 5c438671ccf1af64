#pragma once
// A lazily determinized view of the grammar's pushdown matcher. A parse stack is a node in a
// hash-consed tree (node = element position + parent node; node 0 is the bottom: below the root's
// frame, or below the frame a local walk started from), so equal stacks are equal ids. A state is
// the sorted set of stack tops after closure (every top at a Byte element; node 0 in the set means
// the grammar can end there). States are interned and each (state, byte) transition is computed
// once and kept in a 256-wide row, so the hot loops (token-trie walks, accepting a token) are
// table lookups and only new states cost a closure. The cache only grows; flush() empties it
// keeping one state, and callers do so between tokens when it grows large.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/ir.h"

namespace glass::grammar {

class Automaton {
 public:
  static constexpr uint32_t kBottom = 0;
  static constexpr int32_t kDead = 0;  // the empty state: nothing matches

  explicit Automaton(const Grammar& g);

  // The state of one stack whose top is element `pos` (a Byte element or a rule call) over the bottom.
  int32_t start_state(uint32_t pos);
  // The state of one stack given by its frames' positions, top first, over the bottom.
  int32_t start_stack(std::span<const uint32_t> frames_top_first);
  // The state after `byte`; kDead when no stack accepts it.
  int32_t next(int32_t state, uint8_t byte) {
    const size_t i = static_cast<size_t>(state) * 256 + byte;
    if (trans_[i] >= 0) return trans_[i];
    const int32_t t = compute(state, byte);  // may grow trans_: index again after
    trans_[i] = t;
    return t;
  }
  bool can_end(int32_t state) const { return state_can_end_[static_cast<size_t>(state)] != 0; }
  // Stack tops (node ids; node 0 excluded).
  std::span<const uint32_t> tops(int32_t state) const {
    const size_t s = static_cast<size_t>(state);
    const uint32_t b = state_begin_[s] + (state_can_end_[s] ? 1 : 0);
    return {state_nodes_.data() + b, state_nodes_.data() + state_begin_[s + 1]};
  }
  uint32_t pos(uint32_t node) const { return nodes_[node].pos; }
  uint32_t parent(uint32_t node) const { return nodes_[node].parent; }
  // A closure produced more than kMaxStacks stacks or expanded more than kMaxClosure nodes (an
  // ambiguous grammar); the transition was made dead. Sticky until flush().
  bool overflowed() const { return overflowed_; }
  size_t n_states() const { return state_begin_.size() - 1; }
  size_t n_nodes() const { return nodes_.size(); }
  // Forgets every state and node but `keep`, which is rebuilt; returns its new id.
  int32_t flush(int32_t keep);

 private:
  struct Node {
    uint32_t pos, parent;
  };
  uint32_t intern(uint32_t pos, uint32_t parent);
  int32_t intern_state();  // from out_
  void expand();           // closure of work_ into out_
  int32_t compute(int32_t state, uint8_t byte);
  void reset();

  const Grammar& g_;
  std::vector<Node> nodes_;
  std::unordered_map<uint64_t, uint32_t> node_ids_;
  std::vector<uint32_t> stamp_;
  uint32_t epoch_ = 0;
  std::vector<uint32_t> work_, out_;
  // States: nodes (sorted; node 0 first when present) in state_nodes_[state_begin_[s] .. [s + 1]).
  std::vector<uint32_t> state_nodes_, state_begin_;
  std::vector<uint8_t> state_can_end_;  // bytes, not vector<bool>: read on every trie node
  std::vector<int32_t> trans_;
  std::unordered_map<uint64_t, std::vector<int32_t>> state_ids_;  // by hash of the node set
  bool overflowed_ = false;
};

}  // namespace glass::grammar
