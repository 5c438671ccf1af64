#pragma once
// SentencePiece-style BPE as llama.cpp runs it for tokenizer.ggml.model "llama" (llm_tokenizer_spm in
// llama.cpp's src/llama-vocab.cpp): spaces become U+2581, a U+2581 is prepended at the start of a
// segment, the text is split into UTF-8 characters, and the adjacent pair whose concatenation is a
// token with the highest score is merged (ties: leftmost) until no pair forms a token. A piece left
// that is not a token falls back to its bytes' <0xXX> tokens, or to unk when a byte has none.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/algorithm.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace glass::tokenizer {

class SpmAlgorithm final : public Algorithm {
 public:
  // `vocab` and `index` must outlive this object (the Tokenizer owns all three).
  SpmAlgorithm(const Vocab& vocab, const TokenIndex& index);

  Status encode(std::string_view text, Segment segment, std::vector<int32_t>& out,
                EncodeScratch* scratch = nullptr) const override;
  std::string normal_piece(std::string_view token_text) const override;

  // The token for one raw byte: "<0xXX>", else the one-byte text itself, else -1 (llama.cpp's
  // llama_vocab::byte_to_token).
  int32_t byte_token(uint8_t byte) const { return byte_ids_[byte]; }

 private:
  const Vocab& vocab_;
  const TokenIndex& index_;
  std::array<int32_t, 256> byte_ids_{};
};

// Spaces to U+2581 ("▁"), and back.
std::string escape_whitespace(std::string_view text);
std::string unescape_whitespace(std::string_view text);

}  // namespace glass::tokenizer
