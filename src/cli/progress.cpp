#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli/log.h"

namespace glass::cli {
namespace {

constexpr int kBarWidth = 30;
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);

int percent_of(uint64_t done, uint64_t total) {
  return total == 0 ? 100 : static_cast<int>(std::min(done, total) * 100 / total);
}

// GLASS_PROGRESS: "1" shows the bar from the start, "0" never; anything else leaves the default.
std::string_view progress_env() {
  const char* env = std::getenv("GLASS_PROGRESS");
  return env == nullptr ? std::string_view() : std::string_view(env);
}

Progress::Output stderr_output() {
  Progress::Output o;
  o.write = [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stderr);
    std::fflush(stderr);
  };
  o.now = [] { return Progress::Clock::now(); };
  o.terminal = isatty(fileno(stderr)) != 0;
  o.delay_seconds = progress_env() == "1" ? 0 : 0.5;
  return o;
}

}  // namespace

Progress::Progress(std::string label, Unit unit, std::string noun)
    : Progress(std::move(label), unit, std::move(noun), stderr_output()) {
  enabled_ = log_enabled() && progress_env() != "0";
}

Progress::Progress(std::string label, Unit unit, std::string noun, Output out)
    : label_(std::move(label)), noun_(std::move(noun)), unit_(unit), out_(std::move(out)) {
  start_ = out_.now();
}

std::string Progress::text(uint64_t done, uint64_t total) const {
  const int percent = percent_of(done, total);
  std::string amount;
  if (unit_ == Unit::Bytes) {
    amount = fmt::format("{:.1f}/{:.1f} MiB", static_cast<double>(done) / (1 << 20),
                         static_cast<double>(total) / (1 << 20));
  } else {
    amount = fmt::format("{}/{}", done, total);
  }
  if (!noun_.empty()) amount += " " + noun_;
  if (!out_.terminal) return fmt::format("glass: {}: {}% ({})\n", label_, percent, amount);
  const int filled = percent * kBarWidth / 100;
  // \033[K clears what a longer earlier draw left at the end of the line.
  return fmt::format("\rglass: {} [{}{}] {:3}% {}\033[K", label_,
                     std::string(static_cast<size_t>(filled), '#'),
                     std::string(static_cast<size_t>(kBarWidth - filled), ' '), percent, amount);
}

void Progress::draw(uint64_t done, uint64_t total) {
  out_.write(text(done, total));
  shown_ = true;
}

void Progress::update(uint64_t done, uint64_t total) {
  if (!enabled_ || finished_) return;
  updated_ = true;
  done_ = done;
  total_ = total;
  const auto now = out_.now();
  if (std::chrono::duration<double>(now - start_).count() < out_.delay_seconds) return;
  const int percent = percent_of(done, total);
  if (out_.terminal) {
    // Redrawn when the figure changes, at most ten times a second.
    if (percent == last_percent_ || (shown_ && now - last_draw_ < kRedrawInterval)) return;
    last_percent_ = percent;
    last_draw_ = now;
    draw(done, total);
    return;
  }
  const int quarter = percent / 25;
  // From 25%: a line at the start of a long operation says little. 100% is finish()'s line.
  if (quarter == 0 || quarter <= last_quarter_ || quarter == 4) return;
  last_quarter_ = quarter;
  draw(done, total);
}

Progress::~Progress() {
  if (shown_ && !finished_ && out_.terminal) out_.write("\n");
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  if (!updated_) return;
  if (!shown_ && std::chrono::duration<double>(out_.now() - start_).count() < out_.delay_seconds) return;
  const uint64_t total = total_ == 0 ? done_ : total_;
  draw(total, total);
  if (out_.terminal) out_.write("\n");
}

}  // namespace glass::cli
