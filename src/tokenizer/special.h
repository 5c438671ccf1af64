#pragma once
// Splitting special tokens out of raw text before an algorithm sees it (llama.cpp's
// tokenizer_st_partition). Candidates are the Control, UserDefined and Unknown tokens, longest text
// first; each in turn is cut out of every text fragment left so far, left to right. UserDefined
// tokens are always cut; Control and Unknown ones only with parse_special. A token with the
// kStripLeft / kStripRight flag also drops the ASCII whitespace just before / after it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace glass::tokenizer {

struct Fragment {
  int32_t token = -1;  // a special token, or -1 for raw text [offset, offset + length)
  size_t offset = 0;
  size_t length = 0;
};

// The special-token candidates of `vocab` in matching order: longest text first, then lowest id.
std::vector<int32_t> special_token_order(const Vocab& vocab);

// `text` as fragments; raw fragments are never empty. An empty text gives no fragment.
std::vector<Fragment> split_special_tokens(std::string_view text, const Vocab& vocab,
                                           std::span<const int32_t> special_order, bool parse_special);

}  // namespace glass::tokenizer
