#include "tokenizer/wordpiece.h"

#include <fmt/format.h>

#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

bool is_chinese_char(uint32_t cp) {
  return (cp >= 0x04E00 && cp <= 0x09FFF) || (cp >= 0x03400 && cp <= 0x04DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0x0F900 && cp <= 0x0FAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// llama.cpp's llm_tokenizer_wpm_session::preprocess.
std::vector<std::string> wpm_preprocess(std::string_view text, bool lowercase, bool strip_accents) {
  std::vector<uint32_t> cps;
  cps.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unicode::Char c = unicode::decode(text, i);
    cps.push_back(c.cp);  // an ill-formed byte reads as U+FFFD, which is skipped below
    i += c.len;
  }
  if (strip_accents) {
    std::string s;
    for (uint32_t cp : cps) unicode::append(s, cp);
    cps.clear();
    if (Result<std::string> nfd = unicode::normalize(s, unicode::Form::Nfd); nfd) s = std::move(nfd).value();
    for (size_t i = 0; i < s.size();) {
      const unicode::Char c = unicode::decode(s, i);
      cps.push_back(c.cp);
      i += c.len;
    }
  }
  std::vector<std::string> words(1);
  for (uint32_t cp : cps) {
    if (unicode::is_white_space(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == unicode::kReplacement || unicode::is_other(cp)) continue;
    if (strip_accents && unicode::is_mark(cp)) continue;
    std::string s;
    unicode::append(s, lowercase ? unicode::to_lower(cp) : cp);
    if (unicode::is_punctuation(cp) || (cp < 0x7F && unicode::is_symbol(cp)) || is_chinese_char(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = std::move(s);
      words.emplace_back();
    } else {
      words.back() += s;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

Status WordPieceModel::encode_word(std::string_view word, std::vector<int32_t>& out, WordWork& work) const {
  auto unk = [&]() -> Status {
    if (options_.unk_id < 0) {
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("tokenizer: WordPiece cannot encode '{}' and has no unknown token", word));
    }
    out.push_back(options_.unk_id);
    return {};
  };
  size_t n_chars = 0;
  for (size_t i = 0; i < word.size(); i += unicode::decode(word, i).len) ++n_chars;
  if (n_chars > options_.max_input_chars_per_word) return unk();

  const size_t mark = out.size();
  std::string& candidate = work.piece;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int32_t found = -1;
    while (start < end) {
      candidate.clear();
      if (start > 0) candidate += options_.prefix;
      candidate += word.substr(start, end - start);
      found = vocab_.find(candidate);
      if (found >= 0) break;
      // Drop the last character of the candidate.
      size_t back = end - 1;
      while (back > start && (static_cast<uint8_t>(word[back]) & 0xC0) == 0x80) --back;
      end = back;
    }
    if (found < 0) {
      out.resize(mark);
      return unk();
    }
    out.push_back(found);
    start = end;
  }
  return {};
}

Status WpmAlgorithm::encode(std::string_view text, Segment, std::vector<int32_t>& out, EncodeScratch*) const {
  for (const std::string& word : wpm_preprocess(text, lowercase_, strip_accents_)) {
    const std::string w = "\xE2\x96\x81" + word;  // the phantom space of a word start
    const size_t n = w.size();
    const size_t mark = out.size();
    for (size_t i = 0; i < n; ++i) {
      bool match = false;
      for (size_t j = std::min(n, i + max_token_len_ + 1); j > i; --j) {
        if (const int32_t id = index_.find(std::string_view(w).substr(i, j - i)); id >= 0) {
          out.push_back(id);
          match = true;
          i = j - 1;
          break;
        }
      }
      if (!match) {  // discard the word's pieces
        out.resize(mark);
        break;
      }
    }
    if (out.size() == mark) {
      if (unk_id_ < 0) {
        return make_error(
            ErrorCode::InvalidArgument,
            fmt::format("tokenizer: cannot encode '{}': no token matches and there is no unknown token",
                        word));
      }
      out.push_back(unk_id_);
    }
  }
  return {};
}

std::string WpmAlgorithm::normal_piece(std::string_view token_text) const {
  return unescape_whitespace(token_text);
}

}  // namespace glass::tokenizer
