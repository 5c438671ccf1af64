#pragma once
// HF tokenizers' pre-tokenizers (tokenizers/src/pre_tokenizers) and llama.cpp's regex pre-tokenizer
// families, as a flat list of steps. Each step splits every current word into smaller ones (and may
// rewrite them: ByteLevel maps bytes to GPT-2 characters, Metaspace spaces to U+2581); empty words
// are dropped, as HF's PreTokenizedString::split does.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "glass/result.h"
#include "tokenizer/regex.h"

namespace glass::tokenizer {

// What a split does with the delimiters it finds (HF SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

struct SplitRegex {  // "Split" (String patterns compile as literals)
  Regex pattern;
  SplitBehavior behavior = SplitBehavior::Isolated;
  bool invert = false;
};
struct ByteLevelSplit {  // "ByteLevel": optional prefix space, optional GPT-2 regex, byte mapping
  bool add_prefix_space = false;
  bool use_regex = true;
  Regex gpt2;  // the GPT-2 regex (compiled by make_byte_level)
};
enum class PrependScheme { Always, First, Never };
struct MetaspaceSplit {  // "Metaspace"
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend = PrependScheme::Always;
  bool split = true;
};
struct WhitespaceSplit {  // "Whitespace" (\w+|[^\w\s]+) or, with `only_spaces`, "WhitespaceSplit"
  bool only_spaces = false;
};
struct DigitsSplit {  // "Digits"
  bool individual = false;
};
struct PunctuationSplit {  // "Punctuation"
  SplitBehavior behavior = SplitBehavior::Isolated;
};
struct BertSplit {};         // "BertPreTokenizer": whitespace removed, punctuation isolated
struct CharDelimiterSplit {  // "CharDelimiterSplit"
  uint32_t delimiter = ' ';
};

using PreTokenizerStep = std::variant<SplitRegex, ByteLevelSplit, MetaspaceSplit, WhitespaceSplit,
                                      DigitsSplit, PunctuationSplit, BertSplit, CharDelimiterSplit>;

// One word: its text and whether it starts at offset 0 of the original input (Metaspace's "first").
struct Word {
  std::string text;
  bool at_text_start = false;
};

class PreTokenizer {
 public:
  PreTokenizer() = default;
  explicit PreTokenizer(std::vector<PreTokenizerStep> steps) : steps_(std::move(steps)) {}

  bool empty() const { return steps_.empty(); }
  // Splits `words` in place. Fails on ill-formed UTF-8 reaching a regex (InvalidArgument).
  Status apply(std::vector<Word>& words) const;

 private:
  std::vector<PreTokenizerStep> steps_;
};

// A ByteLevel step with the GPT-2 regex compiled.
Result<ByteLevelSplit> make_byte_level(bool add_prefix_space, bool use_regex);

}  // namespace glass::tokenizer
