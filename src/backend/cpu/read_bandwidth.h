#pragma once
// The machine's read bandwidth: a buffer much larger than the caches, split over the thread pool the
// way matmul splits weight rows at T = 1 (parallel_for chunks), read with the widest loads the CPU
// has in two access patterns: each chunk front to back (one memory stream per thread, as a plain
// decode kernel walks its rows), and each chunk as four quarters read in lockstep (four far-apart
// streams per thread: on 2 Zen 4 threads ~75-79 GB/s against ~40-50 for one stream). Decode is
// memory-bound, so the best of the two is its ceiling: weight bytes read per token x tokens/s can
// at best approach it (`glass bench --bandwidth` reports both).
#include <cstddef>
#include <cstdint>

#include "backend/cpu/thread_pool.h"
#include "glass/tools.h"

namespace glass::backend::cpu {

// What it measured: glass::ReadBandwidth (glass/tools.h, public with glass::measure_read_bandwidth).
using glass::ReadBandwidth;

// Reads a `bytes` buffer `passes` times per pattern (after one untimed pass that faults its pages
// in).
ReadBandwidth measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes);

}  // namespace glass::backend::cpu
