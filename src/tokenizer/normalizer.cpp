#include "tokenizer/normalizer.h"

namespace glass::tokenizer {
namespace {

bool is_chinese_char(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Keeps the characters `keep` accepts (ill-formed bytes are kept as they are).
template <typename Keep>
std::string filter(std::string_view s, Keep keep) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unicode::Char c = unicode::decode(s, i);
    if (!c.valid || keep(c.cp)) out.append(s.substr(i, c.len));
    i += c.len;
  }
  return out;
}

std::string strip_spaces(std::string_view s, bool left, bool right) {
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      const unicode::Char c = unicode::decode(s, begin);
      if (!c.valid || !unicode::is_white_space(c.cp)) break;
      begin += c.len;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80) --start;
      const unicode::Char c = unicode::decode(s, start);
      if (!c.valid || start + c.len != end || !unicode::is_white_space(c.cp)) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

struct Apply {
  std::string& text;
  Status operator()(const NormalizeForm& f) {
    Result<std::string> r = unicode::normalize(text, f.form);
    if (!r) return r.error();
    text = std::move(r).value();
    return {};
  }
  Status operator()(const Lowercase&) {
    text = unicode::to_lower(text);
    return {};
  }
  Status operator()(const StripAccents&) {
    text = filter(text, [](uint32_t cp) { return !unicode::is_nonspacing_mark(cp); });
    return {};
  }
  Status operator()(const PrependText& p) {
    if (!text.empty()) text.insert(0, p.text);
    return {};
  }
  Status operator()(const ReplaceText& r) {
    if (!r.pattern.empty()) text = replace_all(text, r.pattern, r.content);
    return {};
  }
  Status operator()(const ReplaceRegex& r) {
    std::vector<std::pair<size_t, size_t>> matches;
    if (Status s = r.pattern.find_all(text, matches); !s) return s;
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : matches) {
      out.append(text, prev, b - prev);
      out += r.content;
      prev = e;
    }
    out.append(text, prev, std::string::npos);
    text = std::move(out);
    return {};
  }
  Status operator()(const StripSpaces& s) {
    text = strip_spaces(text, s.left, s.right);
    return {};
  }
  Status operator()(const BertNormalize& b) {
    Result<std::string> r = bert_normalize(text, b);
    if (!r) return r.error();
    text = std::move(r).value();
    return {};
  }
};

}  // namespace

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (size_t pos = text.find(from); pos != std::string_view::npos; pos = text.find(from, prev)) {
    out.append(text.substr(prev, pos - prev));
    out.append(to);
    prev = pos + from.size();
  }
  out.append(text.substr(prev));
  return out;
}

Result<std::string> bert_normalize(std::string_view text, const BertNormalize& o) {
  std::string s(text);
  if (o.clean_text) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      const unicode::Char c = unicode::decode(s, i);
      const bool tab_or_newline = c.cp == '\t' || c.cp == '\n' || c.cp == '\r';
      if (!c.valid) {
        out += s[i];
      } else if (tab_or_newline || unicode::is_white_space(c.cp)) {
        // \t \n \r are controls that count as whitespace; other controls are dropped below
        if (tab_or_newline || !unicode::is_other(c.cp)) out += ' ';
      } else if (c.cp != 0 && c.cp != unicode::kReplacement && !unicode::is_other(c.cp)) {
        out.append(s, i, c.len);
      }
      i += c.len;
    }
    s = std::move(out);
  }
  if (o.handle_chinese_chars) {
    std::string out;
    out.reserve(s.size() + 16);
    for (size_t i = 0; i < s.size();) {
      const unicode::Char c = unicode::decode(s, i);
      const bool pad = c.valid && is_chinese_char(c.cp);
      if (pad) out += ' ';
      out.append(s, i, c.len);
      if (pad) out += ' ';
      i += c.len;
    }
    s = std::move(out);
  }
  if (o.strip_accents) {
    Result<std::string> nfd = unicode::normalize(s, unicode::Form::Nfd);
    if (!nfd) return nfd.error();
    s = filter(*nfd, [](uint32_t cp) { return !unicode::is_nonspacing_mark(cp); });
  }
  if (o.lowercase) s = unicode::to_lower(s);
  return s;
}

Result<std::string> Normalizer::apply(std::string_view text) const {
  std::string s(text);
  for (const NormalizerStep& step : steps_) {
    if (Status st = std::visit(Apply{s}, step); !st) return st.error();
  }
  return s;
}

}  // namespace glass::tokenizer
