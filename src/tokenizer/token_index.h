#pragma once
// Token text -> id lookup, built once per vocabulary; string_view look-ups allocate nothing. The
// table is open addressing over ids and reads the texts from the vocabulary's own buffer, so a
// token costs 11-22 bytes of slots: a node-based map cost ~64 bytes more and a copy of every text (a
// 3-million-token file's index took 190 MB).
#include <cstdint>
#include <string_view>
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

}  // namespace glass::tokenizer
