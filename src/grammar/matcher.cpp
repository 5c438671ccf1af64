#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>

namespace glass::grammar {
namespace {

constexpr size_t kCachedMasks = 8;

}  // namespace

Matcher::Matcher(std::shared_ptr<const BoundGrammar> bound)
    : bound_(std::move(bound)),
      a_(bound_->grammar()),
      depth_state_(static_cast<size_t>(bound_->vocab().max_len()) + 1) {
  reset();
}

void Matcher::reset() {
  state_ = a_.flush(Automaton::kDead);
  state_ = a_.start_state(bound_->grammar().start);  // a call of the root rule
  cache_.clear();
}

void Matcher::maybe_flush() {
  if (a_.n_states() > 50000 || a_.n_nodes() > (size_t{1} << 22)) {
    state_ = a_.flush(state_);
    cache_.clear();
  }
}

void Matcher::check_deferred(const PositionTable& t, std::span<uint64_t> mask) {
  const TokenIndex& v = bound_->vocab();
  depth_state_[0] = state_;
  size_t common = 0;  // bytes of the last walked token whose states are in depth_state_
  for (size_t k = 0; k < t.deferred.size(); ++k) {
    common = std::min<size_t>(common, t.lcp[k]);
    const uint32_t rank = t.deferred[k];
    const auto id = static_cast<uint32_t>(v.token_at_rank(rank));
    if ((mask[id >> 6] >> (id & 63)) & 1) continue;
    const std::string& s = v.piece(static_cast<int32_t>(id));
    size_t j = common;
    for (; j < s.size(); ++j) {
      const int32_t n = a_.next(depth_state_[j], static_cast<uint8_t>(s[j]));
      if (n == Automaton::kDead) break;
      depth_state_[j + 1] = n;
    }
    if (j == s.size()) mask[id >> 6] |= uint64_t{1} << (id & 63);
    common = j;
  }
}

Status Matcher::fill_mask(std::span<uint64_t> mask) {
  for (const CachedMask& c : cache_)
    if (c.state == state_) {
      std::memcpy(mask.data(), c.bits.data(), mask.size() * sizeof(uint64_t));
      return {};
    }
  std::fill(mask.begin(), mask.end(), 0);
  keys_.clear();
  for (const uint32_t top : a_.tops(state_)) {
    StackKey k;
    k.fill(kNone);
    const Grammar& g = bound_->grammar();
    const auto& rule_of = bound_->rule_of();
    uint32_t n = top;
    k[0] = a_.pos(n);
    size_t i = 1;
    n = a_.parent(n);
    // Below a helper rule's frame, its caller's frame too (bound.h).
    while (i <= kContext && n != Automaton::kBottom && g.rules[rule_of[k[i - 1]]].helper) {
      k[i++] = a_.pos(n);
      n = a_.parent(n);
    }
    k.back() = n == Automaton::kBottom ? 1 : 0;
    keys_.push_back(k);
  }
  std::sort(keys_.begin(), keys_.end());
  keys_.erase(std::unique(keys_.begin(), keys_.end()), keys_.end());
  std::vector<const PositionTable*> tables;
  tables.reserve(keys_.size());
  for (const StackKey& key : keys_) {
    const PositionTable& t = bound_->table(key);
    tables.push_back(&t);
    if (t.dense) {
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= t.bits[w];
    } else {
      for (const int32_t id : t.ids) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  for (const PositionTable* t : tables) check_deferred(*t, mask);
  if (a_.overflowed())
    return make_error(ErrorCode::Unsupported,
                      "grammar: the grammar is too ambiguous here (more than 4096 parse stacks, or 65536 "
                      "stack frames through empty matches, at once)");
  if (can_end())
    for (const int32_t id : bound_->vocab().end_tokens())
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  if (cache_.size() < kCachedMasks) {
    cache_.push_back({state_, std::vector<uint64_t>(mask.begin(), mask.end())});
  } else {
    CachedMask& c = cache_[cache_next_++ % kCachedMasks];
    c.state = state_;
    std::memcpy(c.bits.data(), mask.data(), mask.size() * sizeof(uint64_t));
  }
  return {};
}

bool Matcher::accept_bytes(std::string_view bytes) {
  int32_t s = state_;
  for (const char c : bytes) {
    s = a_.next(s, static_cast<uint8_t>(c));
    if (s == Automaton::kDead) return false;
  }
  state_ = s;
  maybe_flush();
  return true;
}

bool Matcher::accept_token(int32_t id) {
  const TokenIndex& v = bound_->vocab();
  if (id < 0 || id >= v.vocab_size()) return false;
  if (v.is_end(id)) return can_end();
  const std::string& s = v.piece(id);
  if (s.empty()) return false;
  return accept_bytes(s);
}

}  // namespace glass::grammar
