#include "backend/cpu/memory_planner.h"

#include <gtest/gtest.h>

#include <random>

namespace glass::backend::cpu {
namespace {

bool overlap(size_t a0, size_t a1, size_t b0, size_t b1) { return a0 < b1 && b0 < a1; }

TEST(MemoryPlanner, ReusesDeadBuffersAndNeverOverlapsLiveOnes) {
  // A chain: each buffer read only by the next step. Two slots suffice.
  std::vector<BufferLife> chain;
  for (int64_t i = 0; i < 10; ++i) chain.push_back({1000, i, i + 1});
  const MemoryPlan p = plan_memory(chain);
  EXPECT_EQ(p.arena_bytes, 2 * 1024u);
  EXPECT_EQ(p.total_bytes, 10 * 1024u);

  std::mt19937 rng(7);
  std::vector<BufferLife> lives;
  for (int64_t i = 0; i < 300; ++i) {
    const int64_t len = std::uniform_int_distribution<int64_t>(0, 20)(rng);
    lives.push_back({std::uniform_int_distribution<size_t>(1, 5000)(rng), i, i + len});
  }
  const MemoryPlan q = plan_memory(lives, 64);
  for (size_t a = 0; a < lives.size(); ++a) {
    EXPECT_EQ(q.offsets[a] % 64, 0u);
    EXPECT_LE(q.offsets[a] + lives[a].bytes, q.arena_bytes);
    for (size_t b = a + 1; b < lives.size(); ++b) {
      const bool live_together = lives[a].first <= lives[b].last && lives[b].first <= lives[a].last;
      if (live_together) {
        ASSERT_FALSE(
            overlap(q.offsets[a], q.offsets[a] + lives[a].bytes, q.offsets[b], q.offsets[b] + lives[b].bytes))
            << a << " " << b;
      }
    }
  }
  EXPECT_LT(q.arena_bytes, q.total_bytes / 4);
}

}  // namespace
}  // namespace glass::backend::cpu
