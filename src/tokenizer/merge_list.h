#pragma once
// BPE merges by rank, both parts of every merge in one buffer. A vector of string pairs costs 64
// bytes of headers per merge (and a heap block per long part): a tokenizer.json of 3 million short
// merges took ~200 MB that way, ten times its text. Here a merge costs its bytes plus 8.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/huge_pages.h"

namespace glass::tokenizer {

class MergeList {
 public:
  using Merge = std::pair<std::string_view, std::string_view>;

  MergeList() = default;
  MergeList(std::initializer_list<Merge> merges) {
    for (const Merge& m : merges) add(m.first, m.second);
  }

  // The largest total of part bytes a list holds (its offsets are 32-bit).
  static constexpr size_t kMaxBytes = std::numeric_limits<uint32_t>::max();

  // False (and nothing added) when the parts would take the list past kMaxBytes.
  bool add(std::string_view left, std::string_view right) {
    if (left.size() + right.size() > kMaxBytes - text_.size()) return false;
    text_.append(left);
    ends_.push_back(static_cast<uint32_t>(text_.size()));
    text_.append(right);
    ends_.push_back(static_cast<uint32_t>(text_.size()));
    return true;
  }

  void reserve(size_t merges, size_t bytes) {
    reserve_huge(ends_, 2 * merges);
    reserve_huge(text_, bytes);
  }
  void clear() {
    text_.clear();
    ends_.clear();
  }

  size_t size() const { return ends_.size() / 2; }
  size_t bytes() const { return text_.size(); }  // of both parts of every merge
  bool empty() const { return ends_.empty(); }

  Merge operator[](size_t i) const { return {part(2 * i), part(2 * i + 1)}; }

 private:
  std::string_view part(size_t k) const {
    const uint32_t begin = k == 0 ? 0 : ends_[k - 1];
    return std::string_view(text_).substr(begin, ends_[k] - begin);
  }

  std::string text_;            // left then right part of each merge, back to back
  std::vector<uint32_t> ends_;  // the end of every part in text_
};

}  // namespace glass::tokenizer
