#pragma once
// A progress bar on stderr for the long operations (load with weight repacking, synth, quantize):
// redrawn in place on a terminal, a plain line at each quarter otherwise (logs and pipes), and
// nothing at all for an operation that ends within half a second or under --log-disable.
// GLASS_PROGRESS=1 shows it from the start (tests), GLASS_PROGRESS=0 never.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace glass::cli {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Unit { Count, Bytes };  // "12/132 tensors" or "812.0/980.3 MiB"
  struct Output {
    std::function<void(std::string_view)> write;  // text to stderr
    std::function<Clock::time_point()> now;
    bool terminal = false;     // redraw one line in place
    double delay_seconds = 0;  // shown only once the operation has lasted this long
  };

  // stderr, a terminal when it is one, after 0.5 s; GLASS_PROGRESS and --log-disable as above.
  Progress(std::string label, Unit unit, std::string noun = "");
  Progress(std::string label, Unit unit, std::string noun, Output out);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // Ends a bar left on the terminal's line (an error stopped the operation) without claiming 100%.
  ~Progress();

  void update(uint64_t done, uint64_t total);
  // The operation succeeded: the bar at 100% where it was shown (and the terminal's newline); nothing
  // where it never reported (a load with no weight to repack).
  void finish();

 private:
  std::string text(uint64_t done, uint64_t total) const;
  void draw(uint64_t done, uint64_t total);

  std::string label_, noun_;
  Unit unit_;
  Output out_;
  bool enabled_ = true, finished_ = false, shown_ = false, updated_ = false;
  Clock::time_point start_, last_draw_;
  uint64_t done_ = 0, total_ = 0;
  int last_percent_ = -1, last_quarter_ = -1;
};

}  // namespace glass::cli
