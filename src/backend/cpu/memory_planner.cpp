#include "backend/cpu/memory_planner.h"

#include <algorithm>
#include <numeric>

namespace glass::backend::cpu {

MemoryPlan plan_memory(const std::vector<BufferLife>& buffers, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].first < buffers[b].first; });
  struct Live {
    size_t offset, end;
    int64_t last;
  };
  std::vector<Live> live;  // kept sorted by offset
  for (size_t i : order) {
    const BufferLife& b = buffers[i];
    const size_t bytes = (b.bytes + alignment - 1) / alignment * alignment;
    plan.total_bytes += bytes;
    // A buffer read for the last time by an earlier step is free now; one read by this very step
    // is not (the step reads it while writing the new buffer).
    std::erase_if(live, [&](const Live& l) { return l.last < b.first; });
    size_t offset = 0;
    for (const Live& l : live) {
      if (l.offset >= offset + bytes) break;  // the gap before l fits
      offset = std::max(offset, l.end);
    }
    plan.offsets[i] = offset;
    const Live entry{offset, offset + bytes, b.last};
    live.insert(std::upper_bound(live.begin(), live.end(), entry,
                                 [](const Live& x, const Live& y) { return x.offset < y.offset; }),
                entry);
    plan.arena_bytes = std::max(plan.arena_bytes, offset + bytes);
  }
  return plan;
}

}  // namespace glass::backend::cpu
