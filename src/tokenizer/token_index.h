#pragma once
// Token text -> id lookup, built once per vocabulary; string_view look-ups allocate nothing. The
// table is open addressing over ids and reads the texts from the vocabulary's own buffer, so a
// token costs 11-22 bytes of slots: a node-based map cost ~64 bytes more and a copy of every text (a
// 3-million-token file's index took 190 MB).
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/result.h"
#include "tokenizer/vocab.h"

namespace glass::tokenizer {

class TokenIndex {
 public:
  // Fails (InvalidArgument) on an empty or duplicate token text, naming both ids. The index refers
  // to vocab.tokens, which must outlive it and stay unchanged.
  static Result<TokenIndex> build(const Vocab& vocab);

  // The hash the table probes with: its low bits pick the slot, its high bits are the tag. Also
  // the tokenizer.json loader's key table (hf_tokenizer.cpp).
  static uint64_t hash(std::string_view s);

  // The id of the token whose text is exactly `text`, or -1.
  int32_t find(std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash(text);
    const auto tag = static_cast<uint32_t>(h >> 32);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && text_of(s.id) == text) return s.id;
    }
  }

 private:
  struct Slot {
    int32_t id = -1;   // -1: empty
    uint32_t tag = 0;  // the hash's high bits: most mismatches never read the text
  };
  std::string_view text_of(int32_t id) const { return (*texts_)[static_cast<size_t>(id)]; }

  const TokenTexts* texts_ = nullptr;
  std::vector<Slot> slots_;  // at most 3/4 full
  size_t mask_ = 0;
};

// The hashes of n texts in order, each computed kAhead texts early with the slot it picks in a table
// of mask + 1 slots fetched then: a table of millions of slots misses the cache on nearly every
// insert, and waiting for each miss in turn took 0.2 s of a 3M-token load. TokenIndex::build and the
// tokenizer.json key table fill their tables through it.
template <class TextAt, class Slot>
class HashesAhead {
 public:
  static constexpr size_t kAhead = 16;
  HashesAhead(size_t n, TextAt text_at, const Slot* slots, size_t mask)
      : n_(n), text_at_(std::move(text_at)), slots_(slots), mask_(mask) {
    for (size_t i = 0; i < std::min(n, kAhead); ++i) fetch(i);
  }
  // The hash of text i, for i = 0, 1, 2, ... in turn.
  uint64_t next(size_t i) {
    const uint64_t h = ahead_[i % kAhead];
    if (i + kAhead < n_) fetch(i + kAhead);
    return h;
  }

 private:
  void fetch(size_t i) {
    const uint64_t h = TokenIndex::hash(text_at_(i));
    ahead_[i % kAhead] = h;
    __builtin_prefetch(&slots_[h & mask_]);
  }
  size_t n_;
  TextAt text_at_;
  const Slot* slots_;
  size_t mask_;
  std::array<uint64_t, kAhead> ahead_{};
};

}  // namespace glass::tokenizer
