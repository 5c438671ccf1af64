#pragma once
// A compiled PCRE2 pattern (UTF + UCP, JIT when available) for pre-tokenizer splits and normalizer
// replacements. Patterns come from HF tokenizer.json (written for Oniguruma) and llama.cpp's
// pre-tokenizer table; `\s` and `\w` are rewritten to Oniguruma's Unicode classes (White_Space,
// which unlike PCRE2's \s includes U+0085), and `^`/`$` match at line boundaries as in Ruby syntax.
// Compiled once per tokenizer; immutable and safe to share between threads.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/result.h"

namespace glass::tokenizer {

class Regex {
 public:
  // Fails with InvalidArgument naming the pattern and PCRE2's message and offset.
  static Result<Regex> compile(std::string_view pattern);
  // A pattern matching `text` literally.
  static Result<Regex> literal(std::string_view text);

  // Appends the [begin, end) byte ranges of the non-overlapping matches in `text`, left to right. An
  // empty match is reported (a split point) and the search resumes one character later. `text`
  // must be well-formed UTF-8 (InvalidArgument otherwise).
  Status find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string pattern_;
};

// The Oniguruma -> PCRE2 rewrite compile() applies (exposed for tests).
std::string translate_onig_pattern(std::string_view pattern);

}  // namespace glass::tokenizer
