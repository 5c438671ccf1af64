#include "tokenizer/special.h"

#include <algorithm>

namespace glass::tokenizer {
namespace {

// C-locale isspace, as llama.cpp applies it to single bytes.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

}  // namespace

std::vector<int32_t> special_token_order(const Vocab& vocab) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    const TokenType t = vocab.types[i];
    if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) {
      ids.push_back(static_cast<int32_t>(i));
    }
  }
  // llama.cpp sorts by length only (std::sort, unstable); equal lengths go by id here.
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    return vocab.tokens[static_cast<size_t>(a)].size() > vocab.tokens[static_cast<size_t>(b)].size();
  });
  return ids;
}

std::vector<Fragment> split_special_tokens(std::string_view text, const Vocab& vocab,
                                           std::span<const int32_t> special_order, bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({-1, 0, text.size()});

  std::vector<Fragment> next;
  for (const int32_t id : special_order) {
    const auto i = static_cast<size_t>(id);
    const TokenType type = vocab.types[i];
    if (!parse_special && (type == TokenType::Control || type == TokenType::Unknown)) continue;
    const std::string_view special = vocab.tokens[i];
    if (special.empty()) continue;  // never matched (Tokenizer::create rejects empty texts anyway)
    const uint8_t strip = vocab.strip.empty() ? uint8_t{kStripNone} : vocab.strip[i];

    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) {
        next.push_back(f);
        continue;
      }
      size_t begin = f.offset;
      const size_t end = f.offset + f.length;
      while (begin < end) {
        const size_t match = text.substr(0, end).find(special, begin);
        if (match == std::string_view::npos) break;
        size_t left_end = match;
        if (strip & kStripLeft) {
          while (left_end > begin && is_space(text[left_end - 1])) --left_end;
        }
        if (left_end > begin) next.push_back({-1, begin, left_end - begin});
        next.push_back({id, match, special.size()});
        begin = match + special.size();
        if (strip & kStripRight) {
          while (begin < end && is_space(text[begin])) ++begin;
        }
      }
      if (begin < end) next.push_back({-1, begin, end - begin});
    }
    fragments.swap(next);
  }
  return fragments;
}

}  // namespace glass::tokenizer
