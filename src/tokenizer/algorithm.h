#pragma once
// The seam between the Tokenizer facade and one tokenization algorithm. The facade owns what all
// algorithms share (vocabulary validation, special-token splitting, BOS/EOS, the piece cache, decode);
// an algorithm turns one fragment of plain text (no special tokens inside) into ids and says how a
// Normal token's text reads back as bytes. SentencePiece (spm.h) is the one implemented; byte-level
// BPE and WordPiece plug in here.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass::tokenizer {

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Appends the ids of `text`, a non-empty fragment of raw text. `segment_start` is true for the
  // first fragment and for one that follows a special token (SPM adds its space prefix there).
  virtual Status encode(std::string_view text, bool segment_start, std::vector<int32_t>& out) const = 0;

  // The bytes a Normal token's text stands for.
  virtual std::string normal_piece(std::string_view token_text) const = 0;
};

}  // namespace glass::tokenizer
