#pragma once
// The machine's read bandwidth as the decode matvec sees it: a buffer much larger than the caches,
// split over the thread pool the way matmul splits weight rows at T = 1 (parallel_for chunks, each
// streamed front to back with the widest loads the CPU has). Decode is memory-bound, so this is
// its ceiling: weight bytes read per token x tokens/s can at best approach it (`glass bench
// --bandwidth` reports both).
#include <cstddef>
#include <cstdint>

#include "backend/cpu/thread_pool.h"

namespace glass::backend::cpu {

struct ReadBandwidth {
  double best_gbs = 0;  // best pass, 1e9 bytes/s
  double mean_gbs = 0;
  size_t bytes = 0;  // buffer size
  int passes = 0;
  uint64_t checksum = 0;  // of what was read, so the reads cannot be optimized away
};

// Reads a `bytes` buffer `passes` times (after one untimed pass that faults its pages in).
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes);

}  // namespace glass::backend::cpu
