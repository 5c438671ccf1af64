#include "tokenizer/token_index.h"

#include <fmt/format.h>

namespace glass::tokenizer {

Result<TokenIndex> TokenIndex::build(const Vocab& vocab) {
  TokenIndex index;
  index.ids_.reserve(vocab.tokens.size());
  for (size_t i = 0; i < vocab.tokens.size(); ++i) {
    const std::string& text = vocab.tokens[i];
    if (text.empty()) {
      return make_error(ErrorCode::InvalidArgument, fmt::format("tokenizer: token {} has empty text", i));
    }
    auto [it, inserted] = index.ids_.emplace(text, static_cast<int32_t>(i));
    if (!inserted) {
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("tokenizer: tokens {} and {} have the same text '{}'", it->second, i, text));
    }
  }
  return index;
}

}  // namespace glass::tokenizer
