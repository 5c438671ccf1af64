#include "tokenizer/decoder.h"

#include <algorithm>

#include "tokenizer/normalizer.h"
#include "tokenizer/pipeline_algorithm.h"
#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" token (HF: exactly 6 bytes), or -1.
int fallback_byte(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// The characters of `s` as byte ranges.
std::vector<std::string_view> chars_of(std::string_view s) {
  std::vector<std::string_view> chars;
  for (size_t i = 0; i < s.size();) {
    const uint32_t n = unicode::decode(s, i).len;
    chars.push_back(s.substr(i, n));
    i += n;
  }
  return chars;
}

std::string wordpiece_cleanup(std::string s) {
  s = clean_up_tokenization(std::move(s));
  return replace_all(s, " do not", " don't");
}

struct Step {
  std::vector<std::string>& tokens;

  void operator()(const ByteLevelDecode&) {
    std::string bytes;
    for (const std::string& t : tokens) bytes += byte_level_to_bytes(t);
    tokens.assign(1, unicode::lossy(bytes));
  }
  void operator()(const ByteFallbackDecode&) {
    std::vector<std::string> out;
    std::string pending;  // bytes of the current run of byte tokens
    size_t n_pending = 0;
    auto flush = [&] {
      if (n_pending == 0) return;
      if (unicode::first_invalid(pending) == std::string_view::npos) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < n_pending; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      pending.clear();
      n_pending = 0;
    };
    for (std::string& t : tokens) {
      if (const int b = fallback_byte(t); b >= 0) {
        pending += static_cast<char>(b);
        ++n_pending;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
  void operator()(const FuseDecode&) {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
  void operator()(const StripDecode& s) {
    for (std::string& t : tokens) {
      const auto chars = chars_of(t);
      size_t start_cut = 0;
      for (size_t i = 0; i < std::min(s.start, chars.size()); ++i) {
        if (chars[i] != s.content) break;
        start_cut = i + 1;
      }
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < std::min(s.stop, chars.size()); ++i) {
        const size_t index = chars.size() - i - 1;
        if (chars[index] != s.content) break;
        stop_cut = index;
      }
      std::string r;
      for (size_t i = start_cut; i < stop_cut; ++i) r += chars[i];
      t = std::move(r);
    }
  }
  void operator()(const ReplaceDecode& r) {
    if (r.pattern.empty()) return;
    for (std::string& t : tokens) t = replace_all(t, r.pattern, r.content);
  }
  void operator()(const MetaspaceDecode& m) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], m.replacement, i == 0 && m.prepend ? "" : " ");
    }
  }
  void operator()(const WordPieceDecode& w) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!w.prefix.empty() && t.compare(0, w.prefix.size(), w.prefix) == 0) {
          t.erase(0, w.prefix.size());
        } else {
          t = " " + t;
        }
      }
      if (w.cleanup) t = wordpiece_cleanup(std::move(t));
    }
  }
  void operator()(const BpeSuffixDecode& b) {
    if (b.suffix.empty()) return;
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], b.suffix, i + 1 == tokens.size() ? "" : " ");
    }
  }
};

}  // namespace

std::string Decoder::decode(std::vector<std::string> tokens) const {
  for (const DecoderStep& step : steps_) std::visit(Step{tokens}, step);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string clean_up_tokenization(std::string s) {
  for (const auto& [from, to] :
       {std::pair{" .", "."}, std::pair{" ?", "?"}, std::pair{" !", "!"}, std::pair{" ,", ","},
        std::pair{" ' ", "'"}, std::pair{" n't", "n't"}, std::pair{" 'm", "'m"}, std::pair{" 's", "'s"},
        std::pair{" 've", "'ve"}, std::pair{" 're", "'re"}}) {
    s = replace_all(s, from, to);
  }
  return s;
}

std::string clean_up_llama_cpp(std::string_view in) {
  // Three passes over the text, as llama_vocab::impl::detokenize makes them.
  std::string text(in);
  // 1: no space before ? ! . ,
  {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      const char x = text[i];
      if (i > 0 && text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) out.pop_back();
      out += x;
    }
    text = std::move(out);
  }
  // 2: " ' " -> "'"
  {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      const char x = text[i];
      if (i > 0 && x == '\'' && i + 1 < text.size() && text[i - 1] == ' ' && text[i + 1] == ' ') {
        out.pop_back();
        out += x;
        ++i;  // drop the next space
        continue;
      }
      out += x;
    }
    text = std::move(out);
  }
  // 3: " 's", " 'm", " 're", " 've" lose their space (" 't", " 'd", " 'll" keep it)
  {
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      const char x = text[i];
      if (i > 0 && text[i - 1] == ' ' && x == '\'' && i + 1 < text.size()) {
        const char x1 = text[i + 1];
        const char x2 = i + 2 < text.size() ? text[i + 2] : '\0';
        if (x1 == 's' || x1 == 'm' ||
            (i + 2 < text.size() && ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')))) {
          out.pop_back();
        }
      }
      out += x;
    }
    text = std::move(out);
  }
  return text;
}

}  // namespace glass::tokenizer
