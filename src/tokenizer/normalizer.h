#pragma once
// HF tokenizers' normalizers (tokenizers/src/normalizers), as a flat list of steps applied in order
// (a "Sequence" is flattened). Each step maps a whole text segment to a new one; glass keeps no
// offsets, so only the resulting text matters.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "glass/result.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode.h"

namespace glass::tokenizer {

struct NormalizeForm {
  unicode::Form form;
};
struct Lowercase {};
struct StripAccents {};  // drop nonspacing marks (Mn) as they stand; NFD is a separate step
struct PrependText {     // "Prepend": only to a non-empty segment
  std::string text;
};
struct ReplaceText {  // "Replace" with a String pattern (literal, non-overlapping, left to right)
  std::string pattern;
  std::string content;
};
struct ReplaceRegex {  // "Replace" with a Regex pattern
  Regex pattern;
  std::string content;
};
struct StripSpaces {  // "Strip": White_Space at the left and/or right end
  bool left = true;
  bool right = true;
};
struct BertNormalize {  // "BertNormalizer"
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // tokenizer.json's null means "same as lowercase"; the loader resolves it
  bool lowercase = true;
};

using NormalizerStep = std::variant<NormalizeForm, Lowercase, StripAccents, PrependText, ReplaceText,
                                    ReplaceRegex, StripSpaces, BertNormalize>;

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

  bool empty() const { return steps_.empty(); }
  // Fails only on ill-formed UTF-8 that a Unicode step cannot read (InvalidArgument).
  Result<std::string> apply(std::string_view text) const;

 private:
  std::vector<NormalizerStep> steps_;
};

// Replaces every occurrence of `from` (non-empty) in `text` with `to`.
std::string replace_all(std::string_view text, std::string_view from, std::string_view to);
// HF's BERT clean_text / chinese-character padding / accent stripping / lowercasing, in that order.
Result<std::string> bert_normalize(std::string_view text, const BertNormalize& options);

}  // namespace glass::tokenizer
