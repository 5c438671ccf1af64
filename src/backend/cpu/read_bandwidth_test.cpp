#include "backend/cpu/read_bandwidth.h"

#include <gtest/gtest.h>

namespace glass::backend::cpu {
namespace {

// The figures themselves are machine-dependent; what is checked is the accounting: the buffer is
// the requested size rounded down to whole 256-byte blocks, every pass is timed, and the reads
// really happened (the checksum of a buffer holding 0, 1, 2, ... is not zero).
TEST(ReadBandwidth, MeasuresTheRequestedBufferEveryPass) {
  ThreadPool pool(2);
  const ReadBandwidth r = measure_read_bandwidth(pool, (size_t{4} << 20) + 100, 3);
  EXPECT_EQ(r.bytes, size_t{4} << 20);
  EXPECT_EQ(r.passes, 3);
  EXPECT_GT(r.mean_gbs, 0.0);
  EXPECT_GE(r.best_gbs, r.mean_gbs);
  EXPECT_NE(r.checksum, 0u);
}

}  // namespace
}  // namespace glass::backend::cpu
