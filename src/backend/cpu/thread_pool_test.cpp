// The pool runs every task exactly once, on at most size() threads at a time, across many jobs
// (the generation hand-off), from several callers (jobs never interleave), and idles to sleep.
#include "backend/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <chrono>

namespace glass::backend::cpu {
namespace {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  for (int64_t n : {0, 1, 2, 7, 100, 1001}) {
    for (int64_t grain : {1, 3, 64}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      parallel_for(pool, n, grain, [&](int64_t b, int64_t e, int thread) {
        if (thread < 0 || thread >= pool.size()) bad_thread++;
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << grain;
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ManyShortJobsAndSmallOnesStayOnTheCaller) {
  ThreadPool pool(2);
  const uint64_t before = pool.jobs_dispatched();
  int64_t total = 0;
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 20000; ++job) {
    parallel_for(pool, 8, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    total += 28;
  }
  EXPECT_EQ(sum.load(), total);
  EXPECT_EQ(pool.jobs_dispatched() - before, 20000u);
  parallel_for(pool, 5, 100, [&](int64_t, int64_t, int thread) { EXPECT_EQ(thread, 0); });
  EXPECT_EQ(pool.jobs_dispatched() - before, 20000u);  // one chunk: ran inline
}

// Jobs of alternating sizes back to back: a worker that finishes the last task of a small job and
// looks again while the next, larger job is being published must not claim a task of it through
// the old job's exhausted claim counter (which made a task run twice and the job's done count
// overshoot, so the caller waited forever). Every task of every job runs exactly once.
TEST(ThreadPool, BackToBackJobsOfDifferentSizesRunEachTaskOnce) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> hits(16);
  int64_t bad = 0;
  for (int job = 0; job < 200000; ++job) {
    const int64_t n = job % 2 == 0 ? 2 : 16;
    pool.run(n, [&](int64_t task, int) {
      hits[static_cast<size_t>(task)].fetch_add(1, std::memory_order_relaxed);
    });
    for (int64_t t = 0; t < n; ++t)
      bad += hits[static_cast<size_t>(t)].exchange(0, std::memory_order_relaxed) != 1;
  }
  EXPECT_EQ(bad, 0);
}

TEST(ThreadPool, TwoCallersTakeTurns) {
  ThreadPool pool(2);
  std::atomic<int> inside{0}, overlap{0};
  auto caller = [&] {
    for (int i = 0; i < 500; ++i) {
      const auto lock = pool.lock();
      if (inside++ != 0) overlap++;
      std::atomic<int64_t> n{0};
      parallel_for(pool, 64, 1, [&](int64_t b, int64_t e, int) { n += e - b; });
      EXPECT_EQ(n.load(), 64);
      inside--;
    }
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(overlap.load(), 0);
}

TEST(ThreadPool, WakesFromSleep) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // workers fall asleep
  std::atomic<int> n{0};
  parallel_for(pool, 16, 1, [&](int64_t b, int64_t e, int) { n += static_cast<int>(e - b); });
  EXPECT_EQ(n.load(), 16);
}

}  // namespace
}  // namespace glass::backend::cpu
