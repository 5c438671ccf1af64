#pragma once
// The texts of a vocabulary's tokens in id order, back to back in one buffer. A vector of strings
// costs 32 bytes of header per token (and a heap block per text past 15 bytes): a GGUF of 3 million
// short tokens took 96 MB that way, twice its file. Here a token costs its bytes plus 4, and the
// token index (token_index.h) reads the same buffer instead of keeping a copy.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/huge_pages.h"

namespace glass::tokenizer {

class TokenTexts {
 public:
  // The largest total of text bytes (the ends are 32-bit).
  static constexpr size_t kMaxBytes = std::numeric_limits<uint32_t>::max();

  TokenTexts() = default;
  TokenTexts(std::initializer_list<std::string_view> texts) {
    for (std::string_view t : texts) push_back(t);
  }
  explicit TokenTexts(const std::vector<std::string>& texts) {
    size_t bytes = 0;
    for (const std::string& t : texts) bytes += t.size();
    reserve(texts.size(), bytes);
    for (const std::string& t : texts) push_back(t);
  }

  // False (and nothing added) when the text would take the buffer past kMaxBytes; loaders check
  // their totals first and name the file.
  bool add(std::string_view text) {
    if (text.size() > kMaxBytes - text_.size()) return false;
    text_.append(text);
    ends_.push_back(static_cast<uint32_t>(text_.size()));
    return true;
  }
  // add() for texts whose total is known to fit (tests, built vocabularies); past kMaxBytes it
  // throws std::length_error, which the API boundary reports as CapacityExceeded.
  void push_back(std::string_view text) {
    if (!add(text)) throw std::length_error("token texts past 4 GiB");
  }
  // Replaces token i's text. Rewrites the buffer from i on (O(bytes)): for the odd edit, not for
  // filling a vocabulary, which goes through add().
  void set(size_t i, std::string_view text) {
    const std::string tail = text_.substr(ends_[i]);
    const std::vector<uint32_t> rest(ends_.begin() + static_cast<std::ptrdiff_t>(i) + 1, ends_.end());
    const uint32_t old_end = ends_[i];
    text_.resize(begin_of(i));
    ends_.resize(i);
    push_back(text);
    text_.append(tail);
    const uint32_t new_end = ends_.back();
    for (uint32_t e : rest) ends_.push_back(e - old_end + new_end);
  }
  void reserve(size_t n) { ends_.reserve(n); }
  void reserve(size_t n, size_t bytes) {
    reserve_huge(ends_, n);
    reserve_huge(text_, bytes);
  }
  void clear() {
    text_.clear();
    ends_.clear();
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  size_t bytes() const { return text_.size(); }
  // const, so that `tokens[i] = "x"` (which would assign to a temporary view) does not compile: use set().
  const std::string_view operator[](size_t i) const {  // NOLINT(readability-const-return-type)
    return std::string_view(text_).substr(begin_of(i), ends_[i] - begin_of(i));
  }
  std::string_view back() const { return (*this)[size() - 1]; }
  std::vector<std::string> to_strings() const {
    std::vector<std::string> out;
    out.reserve(size());
    for (std::string_view t : *this) out.emplace_back(t);
    return out;
  }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    const_iterator() = default;
    const_iterator(const TokenTexts* texts, size_t i) : texts_(texts), i_(i) {}
    std::string_view operator*() const { return (*texts_)[i_]; }
    const_iterator& operator++() {
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++i_;
      return old;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const TokenTexts* texts_ = nullptr;
    size_t i_ = 0;
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  bool operator==(const TokenTexts& other) const = default;

 private:
  uint32_t begin_of(size_t i) const { return i == 0 ? 0 : ends_[i - 1]; }

  std::string text_;            // every token's text, in id order
  std::vector<uint32_t> ends_;  // where token i's text ends in text_
};

}  // namespace glass::tokenizer
