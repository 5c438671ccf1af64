#include "tokenizer/spm.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>

namespace glass::tokenizer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// Length of the UTF-8 sequence a lead byte announces, from its high nibble; continuation and invalid
// bytes count as one (llama.cpp's unicode_len_utf8).
size_t utf8_len(char c) {
  static constexpr std::array<uint8_t, 16> kLen = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(c) >> 4];
}

// A run of text in the working string; merged symbols grow `n`, absorbed ones drop to n = 0.
struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t offset;
  uint32_t n;
};

struct Bigram {
  int32_t left;
  int32_t right;
  float score;
  uint32_t size;  // bytes of left + right when queued; a mismatch later means the pair is stale
};

// Priority: higher score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

std::string escape_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ' ') {
      out += kSpace;
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape_whitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, kSpace.size()) == kSpace) {
      out += ' ';
      i += kSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

SpmAlgorithm::SpmAlgorithm(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {
  for (int b = 0; b < 256; ++b) {
    int32_t id = index_.find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = index_.find(std::string(1, static_cast<char>(b)));
    byte_ids_[static_cast<size_t>(b)] = id;
  }
}

Status SpmAlgorithm::encode(std::string_view raw, Segment segment, std::vector<int32_t>& out,
                            EncodeScratch*) const {
  std::string text;
  if (vocab_.add_space_prefix && segment.segment_start) text = kSpace;
  text += escape_whitespace(raw);
  if (text.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("tokenizer: text of {} bytes is too long to encode", raw.size()));
  }

  // Split into UTF-8 characters (a truncated sequence at the end is one short character).
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offs = 0; offs < text.size();) {
    const auto n = static_cast<uint32_t>(std::min(utf8_len(text[offs]), text.size() - offs));
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({index - 1, offs + n == text.size() ? -1 : index + 1, static_cast<uint32_t>(offs), n});
    offs += n;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    const std::string_view pair = std::string_view(text).substr(l.offset, l.n + r.n);
    const int32_t id = index_.find(pair);
    if (id < 0) return;
    queue.push({left, right, vocab_.scores[static_cast<size_t>(id)], l.n + r.n});
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(b.left)];
    Symbol& r = symbols[static_cast<size_t>(b.right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // one side was merged meanwhile
    l.n += r.n;
    r.n = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }

  // Every merged symbol is a token; a single character that is not falls back to bytes. (llama.cpp's
  // resegment also consults the merge history, which can only name multi-character pieces, so it
  // never applies to an unmerged character.)
  for (int32_t i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    const std::string_view piece = std::string_view(text).substr(s.offset, s.n);
    if (const int32_t id = index_.find(piece); id >= 0) {
      out.push_back(id);
      continue;
    }
    // The first byte of the piece without a token, if any.
    const auto missing = std::find_if(piece.begin(), piece.end(),
                                      [&](char c) { return byte_ids_[static_cast<uint8_t>(c)] < 0; });
    if (missing == piece.end()) {
      for (char c : piece) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
    } else if (vocab_.unk_id >= 0) {
      out.push_back(vocab_.unk_id);  // one unk per character (llama.cpp would throw here)
    } else {
      const auto byte = static_cast<uint8_t>(*missing);
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("tokenizer: cannot encode byte 0x{:02X}: the vocabulary has no <0x{:02X}> "
                      "token and no unknown token",
                      byte, byte));
    }
  }
  return {};
}

std::string SpmAlgorithm::normal_piece(std::string_view token_text) const {
  return unescape_whitespace(token_text);
}

}  // namespace glass::tokenizer
