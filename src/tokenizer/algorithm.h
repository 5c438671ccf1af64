#pragma once
// The seam between the Tokenizer facade and one tokenization algorithm. The facade owns what all
// algorithms share (vocabulary validation, special-token splitting, BOS/EOS, the piece cache, decode);
// an algorithm turns one fragment of plain text (no special tokens inside) into ids and says how a
// Normal token's text reads back as bytes (llama.cpp's token_to_piece). Implementations: SentencePiece
// (spm.h), a pre-tokenizer feeding a word model (pipeline_algorithm.h: BPE, WordPiece) and llama.cpp's
// WordPiece (wordpiece.h).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass::tokenizer {

// Where a fragment sits in the text being encoded.
struct Segment {
  bool segment_start = true;  // the first fragment, or one right after a special token (SPM adds
                              // its space prefix there)
  bool text_start = true;     // the fragment starts at offset 0 of the text (HF Metaspace "first")
};

// Working memory one encode call keeps across its fragments (word caches, buffers): made by the
// algorithm, owned by the caller, never shared between threads.
class EncodeScratch {
 public:
  virtual ~EncodeScratch() = default;
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;

  // Scratch for one encode call (nullptr: the algorithm needs none).
  virtual std::unique_ptr<EncodeScratch> new_scratch() const { return nullptr; }

  // Appends the ids of `text`, a non-empty fragment of text (normalized already where the tokenizer
  // has a normalizer). `scratch` is this algorithm's new_scratch() (or nullptr).
  virtual Status encode(std::string_view text, Segment segment, std::vector<int32_t>& out,
                        EncodeScratch* scratch = nullptr) const = 0;

  // The bytes a Normal token's text stands for.
  virtual std::string normal_piece(std::string_view token_text) const = 0;
};

}  // namespace glass::tokenizer
