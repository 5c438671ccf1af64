#pragma once
// Helpers shared by the harnesses: splitting one fuzz input into the several texts an entry point
// reads (a template and its context, tokenizer.json and tokenizer_config.json), so one corpus
// file holds one case and the mutator can change any part.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

namespace glass::fuzz {

// The separator between parts: a line no JSON, template or model file of the corpus contains.
inline constexpr std::string_view kSeparator = "\n#glass-fuzz-part#\n";

// The text before the first separator and the text after it (empty when there is none).
inline std::pair<std::string_view, std::string_view> split2(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t at = all.find(kSeparator);
  if (at == std::string_view::npos) return {all, {}};
  return {all.substr(0, at), all.substr(at + kSeparator.size())};
}

}  // namespace glass::fuzz
