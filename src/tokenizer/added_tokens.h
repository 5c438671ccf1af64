#pragma once
// HF tokenizers' added-token splitting (AddedVocabulary::find_matches): the added tokens are found
// in one left-to-right pass, leftmost-longest, and each match then honours its flags: single_word
// (dropped when a word character touches it), lstrip / rstrip (it swallows the whitespace before /
// after it). A match that is dropped is skipped over, never re-searched for shorter tokens. With
// parse_special off, special tokens are dropped the same way (HF's encode_special_tokens).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special.h"

namespace glass::tokenizer {

// An HF added token (tokenizer.json "added_tokens").
struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = false;
  bool in_model_vocab = false;  // the model's own vocabulary has this token too
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // `patterns[i]` is the text that stands for tokens[i] in this pass (its content, or its normalized
  // form for tokens with normalized = true).
  AddedTokenMatcher(const std::vector<const AddedToken*>& tokens, const std::vector<std::string>& patterns);

  bool empty() const { return entries_.empty(); }
  // `text` as fragments covering it (raw fragments are never empty); an empty text gives none.
  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t entry = -1;                                 // the pattern ending here
  };
  struct Entry {
    int32_t id;
    size_t length;
    bool special, lstrip, rstrip, single_word;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // The longest pattern starting at `pos`, or -1.
  int32_t longest_at(std::string_view text, size_t pos) const;

  std::vector<Node> nodes_;
  std::vector<Entry> entries_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace glass::tokenizer
