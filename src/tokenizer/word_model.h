#pragma once
// A model that turns one pre-tokenized word into ids (BPE, WordPiece), and the lookup they share:
// token text -> id restricted to the model's own vocabulary (HF added tokens that are not in the
// model's vocabulary are invisible to it).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "tokenizer/token_index.h"

namespace glass::tokenizer {

class ModelVocab {
 public:
  // `excluded` is empty or one flag per token; flagged ids are never returned.
  ModelVocab(const TokenIndex& index, std::vector<bool> excluded)
      : index_(&index), excluded_(std::move(excluded)) {}
  int32_t find(std::string_view text) const {
    const int32_t id = index_->find(text);
    if (id < 0 || (!excluded_.empty() && excluded_[static_cast<size_t>(id)])) return -1;
    return id;
  }

 private:
  const TokenIndex* index_;
  std::vector<bool> excluded_;
};

// BPE's working state for one word: symbols (runs of the word, linked) and candidate merges.
struct BpeSymbol {
  int32_t id;  // a token, or -1 for text without one (llama.cpp mode)
  int32_t prev;
  int32_t next;
  uint32_t begin;  // byte range in the word
  uint32_t len;
};
struct BpeCandidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
};
// Buffers a word model reuses from word to word within one encode call.
struct WordWork {
  std::vector<BpeSymbol> symbols;
  std::vector<BpeCandidate> heap;
  std::string piece;
};

class WordModel {
 public:
  virtual ~WordModel() = default;
  // Appends the ids of `word` (non-empty).
  virtual Status encode_word(std::string_view word, std::vector<int32_t>& out, WordWork& work) const = 0;
};

}  // namespace glass::tokenizer
