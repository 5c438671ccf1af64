#pragma once
// A one-shot gate for tests that hold a thread at a known point: wait() blocks until open(), at most
// `limit` (a test never hangs), and says whether it opened.
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace glass::test {

class Gate {
 public:
  void open() {
    {
      std::lock_guard lk(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool wait(std::chrono::seconds limit = std::chrono::seconds(10)) {
    std::unique_lock lk(mu_);
    return cv_.wait_for(lk, limit, [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

}  // namespace glass::test
