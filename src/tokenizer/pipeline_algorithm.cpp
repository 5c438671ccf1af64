#include "tokenizer/pipeline_algorithm.h"

#include <string>
#include <unordered_map>

#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

// Words longer than this are not cached (long runs rarely repeat).
constexpr size_t kMaxCachedWord = 64;
// The cache stops growing here; later words are encoded directly.
constexpr size_t kMaxCachedWords = 1 << 16;

struct Hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Scratch final : EncodeScratch {
  // Ids of cached words, stored as [begin, end) ranges into one buffer.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, Hash, std::equal_to<>> cache;
  std::vector<int32_t> cached_ids;
  std::vector<Word> words;
  WordWork work;
};

}  // namespace

std::unique_ptr<EncodeScratch> PipelineAlgorithm::new_scratch() const { return std::make_unique<Scratch>(); }

Status PipelineAlgorithm::encode(std::string_view text, Segment segment, std::vector<int32_t>& out,
                                 EncodeScratch* scratch) const {
  Scratch local;
  Scratch& s = scratch != nullptr ? static_cast<Scratch&>(*scratch) : local;
  s.words.clear();
  s.words.push_back({std::string(text), segment.text_start});
  if (Status st = pre_tokenizer_.apply(s.words); !st) return st;

  for (const Word& w : s.words) {
    if (w.text.size() > kMaxCachedWord) {
      if (Status st = model_->encode_word(w.text, out, s.work); !st) return st;
      continue;
    }
    if (auto it = s.cache.find(std::string_view(w.text)); it != s.cache.end()) {
      out.insert(out.end(), s.cached_ids.begin() + it->second.first,
                 s.cached_ids.begin() + it->second.second);
      continue;
    }
    const size_t mark = out.size();
    if (Status st = model_->encode_word(w.text, out, s.work); !st) return st;
    if (s.cache.size() < kMaxCachedWords) {
      const auto begin = static_cast<uint32_t>(s.cached_ids.size());
      s.cached_ids.insert(s.cached_ids.end(), out.begin() + static_cast<ptrdiff_t>(mark), out.end());
      s.cache.emplace(w.text, std::pair{begin, static_cast<uint32_t>(s.cached_ids.size())});
    }
  }
  return {};
}

std::string PipelineAlgorithm::normal_piece(std::string_view token_text) const {
  switch (pieces_) {
    case PieceStyle::Metaspace:
      return unescape_whitespace(token_text);
    case PieceStyle::ByteLevel:
      return byte_level_to_bytes(token_text);
    case PieceStyle::Raw:
      break;
  }
  return std::string(token_text);
}

std::string byte_level_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unicode::Char c = unicode::decode(text, i);
    const int b = c.valid ? unicode::char_to_byte(c.cp) : -1;
    if (b < 0) return std::string(text);  // not byte-level text: HF keeps the token's own UTF-8
    out += static_cast<char>(b);
    i += c.len;
  }
  return out;
}

}  // namespace glass::tokenizer
