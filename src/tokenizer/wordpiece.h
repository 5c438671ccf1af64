#pragma once
// WordPiece, two ways:
//  * WordPieceModel: HF models/wordpiece. Greedy longest-match-first from the start of the word;
//    non-initial pieces carry the "##" prefix; a word longer than max_input_chars_per_word, or one
//    with a part no token matches, becomes one unk.
//  * WpmAlgorithm: llama.cpp's llm_tokenizer_wpm for GGUF "bert" vocabularies, whose converter
//    stores word-initial pieces as "▁piece" and continuations bare. Its preprocessing (NFD when
//    stripping accents, lowercase, whitespace split, punctuation / CJK isolated) replaces HF's
//    BertNormalizer + BertPreTokenizer.
#include <cstdint>
#include <string>

#include "tokenizer/algorithm.h"
#include "tokenizer/word_model.h"

namespace glass::tokenizer {

struct WordPieceOptions {
  std::string prefix = "##";
  size_t max_input_chars_per_word = 100;
  int32_t unk_id = -1;
};

class WordPieceModel final : public WordModel {
 public:
  WordPieceModel(ModelVocab vocab, WordPieceOptions options)
      : vocab_(std::move(vocab)), options_(std::move(options)) {}
  // Fails (InvalidArgument) when the word needs the unk token and there is none.
  Status encode_word(std::string_view word, std::vector<int32_t>& out, WordWork& work) const override;

 private:
  ModelVocab vocab_;
  WordPieceOptions options_;
};

class WpmAlgorithm final : public Algorithm {
 public:
  // `lowercase` / `strip_accents`: GGUF tokenizer.ggml.normalizer.* (llama.cpp defaults: true).
  WpmAlgorithm(const TokenIndex& index, int32_t unk_id, size_t max_token_len, bool lowercase,
               bool strip_accents)
      : index_(index),
        unk_id_(unk_id),
        max_token_len_(max_token_len),
        lowercase_(lowercase),
        strip_accents_(strip_accents) {}
  Status encode(std::string_view text, Segment segment, std::vector<int32_t>& out,
                EncodeScratch* scratch = nullptr) const override;
  std::string normal_piece(std::string_view token_text) const override;

 private:
  const TokenIndex& index_;
  int32_t unk_id_;
  size_t max_token_len_;
  bool lowercase_;
  bool strip_accents_;
};

}  // namespace glass::tokenizer
