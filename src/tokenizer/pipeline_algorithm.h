#pragma once
// The common shape of BPE and WordPiece tokenizers: a pre-tokenizer splits a fragment into words and
// a word model encodes each word. Words repeat a lot in real text, so each encode call keeps a cache
// of the words it has already encoded, in its scratch (per call: the tokenizer stays immutable and
// lock-free).
#include <memory>

#include "tokenizer/algorithm.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/word_model.h"

namespace glass::tokenizer {

// How a Normal token's text reads back as bytes (llama.cpp token_to_piece).
enum class PieceStyle {
  Raw,        // the text itself
  Metaspace,  // U+2581 reads as a space (SentencePiece-style vocabularies)
  ByteLevel,  // each character is a GPT-2 byte character (byte-level BPE)
};

class PipelineAlgorithm final : public Algorithm {
 public:
  PipelineAlgorithm(PreTokenizer pre_tokenizer, std::unique_ptr<WordModel> model, PieceStyle pieces)
      : pre_tokenizer_(std::move(pre_tokenizer)), model_(std::move(model)), pieces_(pieces) {}

  std::unique_ptr<EncodeScratch> new_scratch() const override;
  Status encode(std::string_view text, Segment segment, std::vector<int32_t>& out,
                EncodeScratch* scratch = nullptr) const override;
  std::string normal_piece(std::string_view token_text) const override;

 private:
  PreTokenizer pre_tokenizer_;
  std::unique_ptr<WordModel> model_;
  PieceStyle pieces_;
};

// GPT-2 characters back to bytes. A text with a character outside the map is returned as it is (HF's
// ByteLevel decoder; llama.cpp would render such a character as "[UNK_BYTE_...]").
std::string byte_level_to_bytes(std::string_view text);

}  // namespace glass::tokenizer
