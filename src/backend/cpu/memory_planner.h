#pragma once
// Assigns every intermediate buffer of a plan an offset in one arena, reusing the space of buffers
// whose last reader has run (liveness over the schedule's order). Greedy first-fit in schedule
// order: buffers live at the same time never overlap; the arena is as small as that allows.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace glass::backend::cpu {

struct BufferLife {
  size_t bytes = 0;
  int64_t first = 0;  // the step that writes it
  int64_t last = 0;   // the last step that reads it (>= first)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per request, multiples of the alignment
  size_t arena_bytes = 0;
  size_t total_bytes = 0;  // without reuse, for reporting
};

MemoryPlan plan_memory(const std::vector<BufferLife>& buffers, size_t alignment = 64);

}  // namespace glass::backend::cpu
