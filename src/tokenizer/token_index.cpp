#include "tokenizer/token_index.h"

#include <fmt/format.h>

#include <functional>
#include <limits>

#include "core/huge_pages.h"

namespace glass::tokenizer {

// libstdc++'s string hash (Murmur, 8 bytes a step), then a final mix so the low bits (the slot) and
// the high bits (the tag) both spread.
uint64_t TokenIndex::hash(std::string_view s) {
  uint64_t h = std::hash<std::string_view>{}(s);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

Result<TokenIndex> TokenIndex::build(const Vocab& vocab) {
  const size_t n = vocab.tokens.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 4))
    return make_error(ErrorCode::InvalidArgument, fmt::format("tokenizer: {} tokens are too many", n));
  TokenIndex index;
  index.texts_ = &vocab.tokens;
  // At most 3/4 full: linear probing stays short (the tags spare most text compares), and a
  // 3-million-token vocabulary takes 32 MB of slots rather than 64.
  size_t capacity = 16;
  while (capacity * 3 < 4 * n) capacity *= 2;
  reserve_huge(index.slots_, capacity);
  index.slots_.assign(capacity, Slot{});
  index.mask_ = capacity - 1;
  HashesAhead hashes(
      n, [&](size_t i) { return vocab.tokens[i]; }, index.slots_.data(), index.mask_);
  for (size_t i = 0; i < n; ++i) {
    const std::string_view text = vocab.tokens[i];
    if (text.empty()) {
      return make_error(ErrorCode::InvalidArgument, fmt::format("tokenizer: token {} has empty text", i));
    }
    const uint64_t h = hashes.next(i);
    const auto tag = static_cast<uint32_t>(h >> 32);
    size_t s = h & index.mask_;
    for (; index.slots_[s].id >= 0; s = (s + 1) & index.mask_) {
      const Slot& other = index.slots_[s];
      if (other.tag == tag && index.text_of(other.id) == text) {
        return make_error(
            ErrorCode::InvalidArgument,
            fmt::format("tokenizer: tokens {} and {} have the same text '{}'", other.id, i, text));
      }
    }
    index.slots_[s] = {static_cast<int32_t>(i), tag};
  }
  return index;
}

}  // namespace glass::tokenizer
