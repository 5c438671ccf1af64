#include "runtime/stop_matcher.h"

#include <algorithm>

namespace glass::runtime {

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(std::string_view text) {
  if (matched_) return {};
  pending_ += text;
  size_t first = std::string::npos;
  for (const std::string& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    matched_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > hold; --n)
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        hold = n;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return matched_ ? std::string{} : out;
}

}  // namespace glass::runtime
