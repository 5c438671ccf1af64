#include "backend/cpu/thread_pool.h"

#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace glass::backend::cpu {
namespace {

// A worker between jobs first spins (the next op of a step follows within microseconds), then
// polls while yielding its core for about a millisecond (the gap between decode steps, where the
// caller samples and hands the token on: a server's HTTP thread and its client run then on the
// core this worker would otherwise burn, instead of preempting a thread in the middle of a step),
// then sleeps.
constexpr int kSpinRounds = 1 << 10;
constexpr auto kYieldFor = std::chrono::microseconds(1000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) {
  if (n_threads <= 0) n_threads = static_cast<int>(std::thread::hardware_concurrency());
  n_threads_ = n_threads < 1 ? 1 : n_threads;
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  try {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker(i); });
  } catch (...) {
    // The system refused a thread (too many asked for): the ones started are stopped and joined,
    // so the error reaches the caller instead of std::terminate from a joinable thread's destructor.
    stop_.store(true, std::memory_order_seq_cst);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::work(int thread) {
  for (;;) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    // acquire: a worker that reads a newer job's n also sees that job's closed claim_ (dispatch),
    // so its compare-and-swap below fails instead of claiming a task through the old counter.
    const int64_t n = n_tasks_.load(std::memory_order_acquire);
    const auto task = static_cast<int64_t>(c & 0xffffffffu);
    if (task >= n) return;
    if (!claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_relaxed))
      continue;
    // The claim succeeded, so the job is still the current one until this task is counted done:
    // its fields are the ones published before claim_.
    const Trampoline fn = fn_.load(std::memory_order_relaxed);
    const void* ctx = ctx_.load(std::memory_order_relaxed);
    fn(ctx, task, thread);
    done_.fetch_add(1, std::memory_order_release);
  }
}

void ThreadPool::dispatch(int64_t n_tasks, Trampoline fn, const void* ctx) {
  ++job_;
  // Close the claim counter first (the new job's id with no task left), then publish the fields:
  // a worker still looking at the previous job's exhausted counter could otherwise read this job's
  // larger n_tasks and claim a task through that counter, running it twice and counting it into
  // this job's done_ (the caller then waited forever; ThreadPool.BackToBackJobs... in the tests).
  claim_.store((static_cast<uint64_t>(job_) << 32) | 0xffffffffu, std::memory_order_seq_cst);
  fn_.store(fn, std::memory_order_relaxed);
  ctx_.store(ctx, std::memory_order_relaxed);
  n_tasks_.store(n_tasks, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);
  claim_.store(static_cast<uint64_t>(job_) << 32, std::memory_order_release);
  jobs_.fetch_add(1, std::memory_order_relaxed);
  // seq_cst pairs with the sleeper's increment-then-check in worker(): either we see the sleeper
  // and wake it, or it sees the new generation and never sleeps.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();
  work(0);
  while (done_.load(std::memory_order_acquire) != n_tasks) cpu_relax();
}

void ThreadPool::worker(int index) {
  uint32_t seen = 0;  // the generation at construction: a job dispatched before this thread ran is still seen
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    std::chrono::steady_clock::time_point yield_until{};
    for (int spin = 0; g == seen; ++spin) {
      if (spin < kSpinRounds) {
        cpu_relax();
      } else if (spin == kSpinRounds) {
        yield_until = std::chrono::steady_clock::now() + kYieldFor;
      } else if (std::chrono::steady_clock::now() < yield_until) {
        std::this_thread::yield();
      } else {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        if (generation_.load(std::memory_order_seq_cst) == seen)
          generation_.wait(seen, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        spin = 0;
      }
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    work(index);
  }
}

}  // namespace glass::backend::cpu
