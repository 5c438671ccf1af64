#pragma once
// Rank-based BPE (GPT-2 style; HF models/bpe and llama.cpp's llm_tokenizer_bpe_session): a word starts
// as one symbol per character, and the adjacent pair with the lowest merge rank (ties: leftmost) is
// merged until no pair has a merge. A priority queue keeps this O(n log n) in the word length.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/merge_list.h"
#include "tokenizer/word_model.h"

namespace glass::tokenizer {

struct BpeOptions {
  bool ignore_merges = false;             // a word that is itself a token is that token
  bool byte_fallback = false;             // HF: a character without a token becomes its <0xXX> byte tokens
  bool fuse_unk = false;                  // HF: consecutive unknown characters share one unk
  int32_t unk_id = -1;                    // HF unk_token; -1: unknown characters are dropped (HF)
  std::string continuing_subword_prefix;  // HF: prefix of every non-initial character
  std::string end_of_word_suffix;         // HF: suffix of the final character
  // llama.cpp: a symbol left without a token falls back to its bytes' one-byte tokens, and a pair
  // listed twice keeps its first rank (HF keeps the last).
  bool llama_cpp = false;
};

class BpeModel final : public WordModel {
 public:
  // Resolves every merge to token ids; a merge whose parts or result are not tokens is an
  // InvalidArgument error naming it (HF's MergeTokenOutOfVocabulary).
  static Result<BpeModel> build(const MergeList& merges, ModelVocab vocab, BpeOptions options);

  Status encode_word(std::string_view word, std::vector<int32_t>& out, WordWork& work) const override;

 private:
  // Open-addressing map (left id, right id) -> merge, probed linearly; sized to stay under half full.
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t new_id = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};  // ids are < 2^31, so no pair has this key

  BpeModel(ModelVocab vocab, BpeOptions options) : vocab_(std::move(vocab)), options_(std::move(options)) {}
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  const Slot* find_merge(int32_t a, int32_t b) const;
  void add_merge(int32_t a, int32_t b, int32_t rank, int32_t new_id);
  // The token of one character (a UTF-8 sequence), as the vocabulary has it.
  int32_t char_id(std::string_view ch) const;

  ModelVocab vocab_;
  BpeOptions options_;
  std::vector<Slot> table_;
  uint64_t mask_ = 0;
  std::vector<int32_t> small_char_ids_;  // token of each code point below U+0800 (-1: none)
  std::vector<int32_t> byte_ids_;        // <0xXX> token per byte (byte_fallback), -1 when absent
};

}  // namespace glass::tokenizer
