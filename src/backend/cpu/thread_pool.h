#pragma once
// The cpu backend's persistent thread pool. Workers are created once (one pool per backend
// instance) and live until it is destroyed: nothing creates a thread per op or per token. Between
// jobs they spin briefly on a generation counter (an op follows the last within microseconds while
// a step runs), then sleep on it (a futex via std::atomic::wait) when the pool goes idle.
//
// All kernels split work through parallel_for(), never by hand: tasks are handed out dynamically
// from an atomic counter, so uneven tasks (a tail tile, a busy core) balance themselves.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace glass::backend::cpu {

class ThreadPool {
 public:
  // n_threads counts the calling thread, which works too; n_threads <= 0 means one per hardware
  // thread.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(task, thread) for every task in [0, n_tasks) and returns when all are done. `thread` is
  // in [0, size()) and unique among concurrently running tasks (for per-thread scratch). One job
  // runs at a time: callers on other threads wait for the running job to finish (see lock()).
  template <class F>
  void run(int64_t n_tasks, const F& fn) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1 || n_threads_ == 1) {
      for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
      return;
    }
    dispatch(
        n_tasks,
        [](const void* ctx, int64_t task, int thread) { (*static_cast<const F*>(ctx))(task, thread); }, &fn);
  }

  // Plans hold this for a whole step so that two sessions sharing a pool never interleave jobs.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(step_mu_); }

  // Jobs dispatched to workers so far (tests use it to see that small ops stay on the caller).
  uint64_t jobs_dispatched() const { return jobs_.load(std::memory_order_relaxed); }

 private:
  using Trampoline = void (*)(const void* ctx, int64_t task, int thread);
  void dispatch(int64_t n_tasks, Trampoline fn, const void* ctx);
  void worker(int index);
  void work(int thread);

  int n_threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex step_mu_;
  // The current job. Tasks are claimed by compare-and-swap on claim_ = (job id << 32) | next task,
  // closed (no task left) before a new job's fields are written and opened after, so a worker that
  // wakes late can never take a task of a job that has moved on, nor one of the next job through
  // the old counter; and the dispatcher waits for tasks done (done_), not for every worker to
  // notice the job: a worker the OS has descheduled does not hold up a step.
  std::atomic<Trampoline> fn_{nullptr};
  std::atomic<const void*> ctx_{nullptr};
  std::atomic<int64_t> n_tasks_{0};
  uint32_t job_ = 0;
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};  // bumped per job: what sleeping workers wait on
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> jobs_{0};
};

// The one work-splitting helper: calls f(begin, end, thread) over [0, n) in chunks of at least
// `grain` items, at most a few chunks per thread so each task is worth its hand-off.
template <class F>
void parallel_for(ThreadPool& pool, int64_t n, int64_t grain, const F& f) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t max_chunks = static_cast<int64_t>(pool.size()) * 4;
  int64_t chunks = (n + grain - 1) / grain;
  if (chunks > max_chunks) chunks = max_chunks;
  const int64_t step = (n + chunks - 1) / chunks;
  chunks = (n + step - 1) / step;
  pool.run(chunks, [&](int64_t c, int thread) {
    const int64_t begin = c * step;
    const int64_t end = begin + step < n ? begin + step : n;
    f(begin, end, thread);
  });
}

}  // namespace glass::backend::cpu
