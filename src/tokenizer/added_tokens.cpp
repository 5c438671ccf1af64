#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

// The last character of s[0, end) and the first of s[begin, ...) as code points (-1: none or
// ill-formed).
int64_t char_before(std::string_view s, size_t end) {
  if (end == 0) return -1;
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80 && end - start < 4) --start;
  const unicode::Char c = unicode::decode(s, start);
  return c.valid && start + c.len == end ? static_cast<int64_t>(c.cp) : -1;
}
int64_t char_at(std::string_view s, size_t begin) {
  if (begin >= s.size()) return -1;
  const unicode::Char c = unicode::decode(s, begin);
  return c.valid ? static_cast<int64_t>(c.cp) : -1;
}

bool is_space_at(std::string_view s, size_t pos, size_t& len) {
  const unicode::Char c = unicode::decode(s, pos);
  len = c.len;
  return c.valid && unicode::is_white_space(c.cp);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<const AddedToken*>& tokens,
                                     const std::vector<std::string>& patterns) {
  nodes_.emplace_back();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& p = patterns[i];
    if (p.empty()) continue;  // HF ignores empty added tokens
    int32_t node = 0;
    for (char ch : p) {
      const auto b = static_cast<uint8_t>(ch);
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& kids = nodes_[static_cast<size_t>(node)].children;
        kids.insert(std::lower_bound(kids.begin(), kids.end(), std::pair<uint8_t, int32_t>{b, -1}),
                    {b, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    first_byte_[static_cast<uint8_t>(p[0])] = true;
    const AddedToken& t = *tokens[i];
    // A pattern listed twice keeps its last token (HF's map insertion).
    const auto index = static_cast<int32_t>(entries_.size());
    entries_.push_back({t.id, p.size(), t.special, t.lstrip, t.rstrip, t.single_word});
    nodes_[static_cast<size_t>(node)].entry = index;
  }
}

int32_t AddedTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto& kids = nodes_[static_cast<size_t>(node)].children;
  const auto it = std::lower_bound(kids.begin(), kids.end(), std::pair<uint8_t, int32_t>{byte, -1});
  return it != kids.end() && it->first == byte ? it->second : -1;
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  int32_t node = 0, found = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    if (nodes_[static_cast<size_t>(node)].entry >= 0) found = nodes_[static_cast<size_t>(node)].entry;
  }
  return found;
}

std::vector<Fragment> AddedTokenMatcher::split(std::string_view text, bool parse_special) const {
  std::vector<Fragment> out;
  if (text.empty()) return out;
  size_t start_offset = 0;  // end of the last emitted fragment
  for (size_t pos = 0; pos < text.size();) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const int32_t e = longest_at(text, pos);
    if (e < 0) {
      ++pos;
      continue;
    }
    const Entry& entry = entries_[static_cast<size_t>(e)];
    size_t start = pos, stop = pos + entry.length;
    pos = stop;  // the next search starts after this match, kept or not
    if (!parse_special && entry.special) continue;
    if (entry.single_word) {
      const int64_t before = char_before(text, start), after = char_at(text, stop);
      const bool start_space = before < 0 || !unicode::is_word(static_cast<uint32_t>(before));
      const bool stop_space = after < 0 || !unicode::is_word(static_cast<uint32_t>(after));
      if (!start_space || !stop_space) continue;
    }
    if (entry.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t b = s - 1;
        while (b > 0 && (static_cast<uint8_t>(text[b]) & 0xC0) == 0x80 && s - b < 4) --b;
        size_t len = 0;
        if (!is_space_at(text, b, len) || b + len != s) break;
        s = b;
      }
      start = std::max(s, start_offset);
    }
    if (entry.rstrip) {
      size_t len = 0;
      while (stop < text.size() && is_space_at(text, stop, len)) stop += len;
    }
    if (start_offset < start) out.push_back({-1, start_offset, start - start_offset});
    out.push_back({entry.id, start, stop - start});
    start_offset = stop;
    pos = std::max(pos, stop);
  }
  if (start_offset < text.size()) out.push_back({-1, start_offset, text.size() - start_offset});
  return out;
}

}  // namespace glass::tokenizer
