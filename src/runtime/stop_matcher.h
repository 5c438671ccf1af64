#pragma once
// Stop strings matched across token boundaries. Text that could still be the start of a stop
// string is held back, so nothing past a stop is ever emitted.
#include <string>
#include <string_view>
#include <vector>

namespace glass::runtime {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Adds decoded text; returns what is now safe to emit. After a match, returns the text before it
  // and matched() turns true.
  std::string push(std::string_view text);
  // The held-back text when generation ends without a match.
  std::string flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool matched_ = false;
};

}  // namespace glass::runtime
