#include "grammar/automaton.h"

#include <algorithm>

namespace glass::grammar {

Automaton::Automaton(const Grammar& g) : g_(g) { reset(); }

void Automaton::reset() {
  nodes_.clear();
  node_ids_.clear();
  stamp_.clear();
  epoch_ = 0;
  nodes_.push_back({0, 0});  // the bottom
  stamp_.push_back(0);
  state_nodes_.clear();
  state_begin_.assign(1, 0);
  state_can_end_.clear();
  trans_.clear();
  state_ids_.clear();
  out_.clear();
  intern_state();  // state 0: dead
  overflowed_ = false;
}

uint32_t Automaton::intern(uint32_t pos, uint32_t parent) {
  const uint64_t key = (uint64_t{pos} << 32) | parent;
  auto [it, fresh] = node_ids_.try_emplace(key, static_cast<uint32_t>(nodes_.size()));
  if (fresh) {
    nodes_.push_back({pos, parent});
    stamp_.push_back(0);
  }
  return it->second;
}

void Automaton::expand() {
  size_t expanded = 0;
  while (!work_.empty()) {
    const uint32_t n = work_.back();
    work_.pop_back();
    if (stamp_[n] == epoch_) continue;
    stamp_[n] = epoch_;
    if (++expanded > kMaxClosure) {  // ir.h: exponentially many stacks through empty matches
      overflowed_ = true;
      work_.clear();
      out_.clear();
      return;
    }
    if (n == kBottom) {
      out_.push_back(n);
      continue;
    }
    const Node node = nodes_[n];
    const Elem& e = g_.elems[node.pos];
    switch (e.kind) {
      case ElemKind::Byte:
        out_.push_back(n);
        break;
      case ElemKind::End:
        work_.push_back(node.parent);  // the parent's pos is already its return address
        break;
      case ElemKind::Rule: {
        const uint32_t ret = node.pos + 1;
        // A call in tail position returns straight to our parent: no frame for it.
        const uint32_t parent = g_.elems[ret].kind == ElemKind::End ? node.parent : intern(ret, node.parent);
        for (const uint32_t alt : g_.rules[e.value].alts) work_.push_back(intern(alt, parent));
        break;
      }
    }
    if (out_.size() > kMaxStacks) {
      overflowed_ = true;
      work_.clear();
      out_.clear();
      return;
    }
  }
}

int32_t Automaton::intern_state() {
  std::sort(out_.begin(), out_.end());
  uint64_t h = 1469598103934665603ull;
  for (const uint32_t n : out_) h = (h ^ n) * 1099511628211ull;
  auto& bucket = state_ids_[h];
  for (const int32_t s : bucket) {
    const auto b = state_nodes_.begin() + state_begin_[static_cast<size_t>(s)];
    const auto e = state_nodes_.begin() + state_begin_[static_cast<size_t>(s) + 1];
    if (std::equal(b, e, out_.begin(), out_.end())) return s;
  }
  const auto id = static_cast<int32_t>(state_begin_.size() - 1);
  bucket.push_back(id);
  state_nodes_.insert(state_nodes_.end(), out_.begin(), out_.end());
  state_begin_.push_back(static_cast<uint32_t>(state_nodes_.size()));
  state_can_end_.push_back(!out_.empty() && out_[0] == kBottom);
  trans_.resize(trans_.size() + 256, -1);
  return id;
}

int32_t Automaton::start_state(uint32_t pos) {
  ++epoch_;
  out_.clear();
  work_.assign(1, intern(pos, kBottom));
  expand();
  return intern_state();
}

int32_t Automaton::start_stack(std::span<const uint32_t> frames) {
  uint32_t n = kBottom;
  for (size_t i = frames.size(); i-- > 0;) n = intern(frames[i], n);
  ++epoch_;
  out_.clear();
  work_.assign(1, n);
  expand();
  return intern_state();
}

int32_t Automaton::compute(int32_t state, uint8_t byte) {
  ++epoch_;
  out_.clear();
  work_.clear();
  // tops() may move when intern adds nodes (not states): copy the node ids first.
  const auto t = tops(state);
  const std::vector<uint32_t> stacks(t.begin(), t.end());
  for (const uint32_t n : stacks) {
    const Node node = nodes_[n];
    if (g_.sets[g_.elems[node.pos].value].has(byte)) work_.push_back(intern(node.pos + 1, node.parent));
  }
  expand();
  return intern_state();
}

int32_t Automaton::flush(int32_t keep) {
  // Each kept stack as its chain of positions, top first.
  std::vector<std::vector<uint32_t>> chains;
  const bool end = can_end(keep);
  for (const uint32_t top : tops(keep)) {
    std::vector<uint32_t> c;
    for (uint32_t n = top; n != kBottom; n = nodes_[n].parent) c.push_back(nodes_[n].pos);
    chains.push_back(std::move(c));
  }
  reset();
  out_.clear();
  if (end) out_.push_back(kBottom);
  for (const auto& c : chains) {
    uint32_t n = kBottom;
    for (auto it = c.rbegin(); it != c.rend(); ++it) n = intern(*it, n);
    out_.push_back(n);
  }
  return intern_state();
}

}  // namespace glass::grammar
