#include "kv/sizing.h"

#include <algorithm>

namespace glass::kv {

int64_t choose_batch(int64_t requested, int64_t n_ctx, int64_t kv_rows) {
  constexpr int64_t kDefaultBatch = 512;
  return std::min(requested > 0 ? requested : kDefaultBatch, std::max(n_ctx, kv_rows));
}

StateSpec size_pools(const PoolRequest& r) {
  StateSpec s;
  const int64_t B = std::max<int64_t>(1, r.block_size);
  auto round_up = [B](int64_t n) { return (n + B - 1) / B * B; };
  GroupSpec full;
  full.block_size = B;
  full.max_blocks = (r.n_ctx + B - 1) / B;
  full.rows = round_up(r.kv_size > 0 ? r.kv_size : r.n_ctx);
  s.groups.push_back(full);
  s.n_seq = static_cast<int32_t>(std::max<int64_t>(1, r.n_seq_max));
  s.allocation = r.dense ? Allocation::Fixed : Allocation::Paged;
  if (r.window > 0) {
    GroupSpec w = full;
    w.window = r.window;
    if (!r.dense) {
      int64_t rows = 0;
      if (r.kv_size_window > 0) {
        rows = round_up(r.kv_size_window);
      } else {
        // Between steps a sequence holds the blocks of its last window - 1 positions (one more for
        // a window not aligned to blocks); a step adds the blocks of its tokens, at most n_batch in
        // all plus one partial block per sequence.
        const int64_t per_seq = round_up(r.window - 1) + 2 * B;
        const int64_t step = round_up(choose_batch(r.n_batch, full.max_blocks * B, full.rows));
        rows = std::min(full.rows, s.n_seq * per_seq + step);
      }
      w.rows = rows + B;  // + the null block
    }
    s.groups.push_back(w);
  }
  if (r.recurrent) {
    GroupSpec rec;
    rec.kind = GroupKind::Recurrent;
    rec.block_size = 1;
    rec.max_blocks = 1;
    rec.rows = RecurrentSlots::slots_for(s.n_seq, recurrent_checkpoints(s.n_seq));
    s.groups.push_back(rec);
  }
  return s;
}

int windowed_group(const StateSpec& s) {
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (s.groups[g].kind == GroupKind::Attention && s.groups[g].window > 0) return static_cast<int>(g);
  return -1;
}

int recurrent_group(const StateSpec& s) {
  for (size_t g = 0; g < s.groups.size(); ++g)
    if (s.groups[g].kind == GroupKind::Recurrent) return static_cast<int>(g);
  return -1;
}

}  // namespace glass::kv
