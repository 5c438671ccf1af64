#pragma once
// Helpers shared by the sampler files (not part of the runtime's interface): candidate ordering,
// softmax, and the text form of sampler state (space-separated decimal integers, written and read
// with std::to_chars/from_chars, so locale-independent).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/sampler.h"

namespace glass::runtime::detail {

// Higher logit first, lower id on ties: the order greedy, top-k and the softmax sort use.
inline bool better(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Sorts by better() unless already sorted.
void sort_by_logit(Candidates& c);
// Sorts, then sets p = softmax(logit) over the candidates. Tokens at the highest logit weigh 1
// before normalization, so +-INFINITY logits give no NaN.
void softmax(Candidates& c);
// Index of the best candidate by better() (c must not be empty).
size_t best_index(const Candidates& c);

inline void put_u64(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (!out.empty()) out += ' ';
  out.append(buf, r.ptr);
}

// Reads space-separated unsigned integers.
class StateReader {
 public:
  explicit StateReader(std::string_view text) : rest_(text) {}
  bool next(uint64_t& v) {
    while (!rest_.empty() && rest_.front() == ' ') rest_.remove_prefix(1);
    const auto r = std::from_chars(rest_.data(), rest_.data() + rest_.size(), v);
    if (r.ec != std::errc() || r.ptr == rest_.data()) return false;
    rest_.remove_prefix(static_cast<size_t>(r.ptr - rest_.data()));
    return rest_.empty() || rest_.front() == ' ';
  }
  bool done() const { return rest_.find_first_not_of(' ') == std::string_view::npos; }

 private:
  std::string_view rest_;
};

}  // namespace glass::runtime::detail
