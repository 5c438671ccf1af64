#include "kv/recurrent.h"

#include <fmt/format.h>

#include <algorithm>

namespace glass::kv {

RecurrentSlots::RecurrentSlots(int32_t n_seq, int32_t n_checkpoints)
    : n_seq_(n_seq),
      n_checkpoints_(n_checkpoints),
      key_(static_cast<size_t>(n_checkpoints), 0),
      used_(static_cast<size_t>(n_checkpoints), 0) {
  GLASS_CHECK(n_seq > 0 && n_checkpoints >= 0);
}

// A linear scan: a store holds a few checkpoints per sequence, and this runs once per block boundary.
int32_t RecurrentSlots::find(uint64_t key) const {
  for (int32_t c = 0; c < n_checkpoints_; ++c)
    if (used_[static_cast<size_t>(c)] != 0 && key_[static_cast<size_t>(c)] == key) return c;
  return -1;
}

bool RecurrentSlots::contains(uint64_t key) const { return find(key) >= 0; }

std::optional<SlotCopy> RecurrentSlots::save(int32_t seq, uint64_t key) {
  if (n_checkpoints_ == 0) return std::nullopt;
  if (const int32_t c = find(key); c >= 0) {
    used_[static_cast<size_t>(c)] = ++tick_;
    return std::nullopt;
  }
  // An empty checkpoint (tick 0) first, else the least recently used.
  const auto c = static_cast<size_t>(std::min_element(used_.begin(), used_.end()) - used_.begin());
  key_[c] = key;
  used_[c] = ++tick_;
  return SlotCopy{live(seq), n_seq_ + static_cast<int32_t>(c)};
}

SlotCopy RecurrentSlots::restore(int32_t seq, uint64_t key) {
  const int32_t c = find(key);
  GLASS_CHECK(c >= 0);
  used_[static_cast<size_t>(c)] = ++tick_;
  return {n_seq_ + c, live(seq)};
}

int32_t RecurrentSlots::n_held() const {
  return static_cast<int32_t>(std::count_if(used_.begin(), used_.end(), [](uint64_t t) { return t != 0; }));
}

Status RecurrentSlots::check() const {
  for (int32_t a = 0; a < n_checkpoints_; ++a) {
    const auto i = static_cast<size_t>(a);
    if (used_[i] > tick_)
      return make_error(ErrorCode::Internal, fmt::format("kv: checkpoint {} used after the last tick", a));
    for (int32_t b = a + 1; b < n_checkpoints_; ++b)
      if (used_[i] != 0 && used_[static_cast<size_t>(b)] != 0 && key_[i] == key_[static_cast<size_t>(b)])
        return make_error(ErrorCode::Internal,
                          fmt::format("kv: checkpoints {} and {} hold the same prefix {:#x}", a, b, key_[i]));
  }
  return {};
}

}  // namespace glass::kv
