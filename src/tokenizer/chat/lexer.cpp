#include "tokenizer/chat/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "tokenizer/chat/pystr.h"

namespace glass::tokenizer::chat {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python whitespace at s[i] (ASCII or a multi-byte Unicode space): its byte length, or 0.
size_t space_len(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return is_py_space(b) ? 1 : 0;
  size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
  n = std::min(n, s.size() - i);
  const std::u32string u = decode_utf8(s.substr(i, n));
  return u.size() == 1 && is_py_space(u[0]) ? n : 0;
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size()) {
    const size_t n = space_len(s, i);
    if (n == 0) break;
    i += n;
  }
  return i;
}

// text.rstrip() (Python whitespace).
std::string_view rstrip_space(std::string_view text) {
  const std::u32string u = decode_utf8(text);
  size_t e = u.size();
  while (e > 0 && is_py_space(u[e - 1])) --e;
  return text.substr(0, encode_utf8(std::u32string_view(u).substr(0, e)).size());
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    const size_t n = space_len(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  explicit Lexer(const SourceText& src) : src_(src), s_(src.text()) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;
    while (pos_ < s_.size()) {
      const size_t tag = find_tag(pos_);
      std::string_view text = s_.substr(pos_, (tag == std::string_view::npos ? s_.size() : tag) - pos_);
      if (tag == std::string_view::npos) {
        emit_data(text, pos_);
        break;
      }
      const char kind = s_[tag + 1];  // '{' variable, '%' block, '#' comment
      const char sign = tag + 2 < s_.size() ? s_[tag + 2] : '\0';
      const bool is_raw = kind == '%' && raw_begin_end(tag).has_value();
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop spaces between the start of the line and a block or comment tag.
        const size_t nl = text.rfind('\n');
        const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
        if ((l_pos > 0 || line_starting) && all_space(text.substr(l_pos))) text = text.substr(0, l_pos);
      }
      emit_data(text, pos_);
      size_t body = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      Status st;
      if (is_raw) {
        st = lex_raw(tag);
      } else if (kind == '#') {
        st = lex_comment(tag, body);
      } else {
        st = lex_tag(tag, body, kind == '{');
      }
      if (!st) return st.error();
      line_starting = pos_ > 0 && s_[pos_ - 1] == '\n';
    }
    tokens_.push_back(Token{TokenType::Eof, "", s_.size()});
    return std::move(tokens_);
  }

 private:
  Error fail(size_t offset, const std::string& message) const {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("chat template:{}: syntax error: {}", src_.location(offset), message));
  }

  size_t find_tag(size_t from) const {
    for (size_t p = s_.find('{', from); p != std::string_view::npos; p = s_.find('{', p + 1)) {
      if (p + 1 < s_.size() && (s_[p + 1] == '{' || s_[p + 1] == '%' || s_[p + 1] == '#')) return p;
    }
    return std::string_view::npos;
  }

  void emit_data(std::string_view text, size_t offset) {
    if (!text.empty()) tokens_.push_back(Token{TokenType::Data, std::string(text), offset});
  }

  // The end of "{% raw %}" (or "{%- raw -%}") starting at `tag`, or nullopt when the tag is not raw.
  std::optional<size_t> raw_begin_end(size_t tag) const {
    size_t p = tag + 2;
    if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) ++p;
    p = skip_space(s_, p);
    if (s_.compare(p, 3, "raw") != 0) return std::nullopt;
    p = skip_space(s_, p + 3);
    if (s_.compare(p, 3, "-%}") == 0) return skip_space(s_, p + 3);
    if (s_.compare(p, 2, "%}") == 0) return p + 2;
    return std::nullopt;
  }

  // After the closing "%}" / "#}" of a block or comment: "-" eats all whitespace, "+" nothing,
  // else trim_blocks eats one newline.
  size_t after_block_end(size_t close, char sign) const {
    if (sign == '-') return skip_space(s_, close);
    if (sign != '+' && close < s_.size() && s_[close] == '\n') return close + 1;
    return close;
  }

  Status lex_raw(size_t tag) {
    const size_t start = *raw_begin_end(tag);
    for (size_t p = s_.find("{%", start); p != std::string_view::npos; p = s_.find("{%", p + 1)) {
      size_t q = p + 2;
      const char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : '\0';
      if (sign) ++q;
      q = skip_space(s_, q);
      if (s_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(s_, q + 6);
      char end_sign = '\0';
      if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) end_sign = s_[q++];
      if (s_.compare(q, 2, "%}") != 0) continue;
      std::string_view text = s_.substr(start, p - start);
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+') {
        const size_t nl = text.rfind('\n');
        if (nl != std::string_view::npos && all_space(text.substr(nl + 1))) text = text.substr(0, nl + 1);
      }
      emit_data(text, start);
      pos_ = after_block_end(q + 2, end_sign);
      return {};
    }
    return fail(tag, "missing end of raw directive");
  }

  Status lex_comment(size_t tag, size_t body) {
    const size_t close = s_.find("#}", body);
    if (close == std::string_view::npos) return fail(tag, "missing end of comment tag");
    const char sign = close > body && (s_[close - 1] == '-' || s_[close - 1] == '+') ? s_[close - 1] : '\0';
    pos_ = after_block_end(close + 2, sign);
    return {};
  }

  Status lex_tag(size_t tag, size_t body, bool variable) {
    tokens_.push_back(Token{variable ? TokenType::VarBegin : TokenType::BlockBegin, "", tag});
    std::vector<char> balance;
    size_t p = body;
    while (true) {
      if (p >= s_.size())
        return fail(tag, variable ? "unexpected end of template, expected '}}'"
                                  : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        // End markers are tried before any token, as in Jinja's rule order.
        if (variable) {
          if (s_.compare(p, 3, "-}}") == 0) {
            tokens_.push_back(Token{TokenType::VarEnd, "", p});
            pos_ = skip_space(s_, p + 3);
            return {};
          }
          if (s_.compare(p, 2, "}}") == 0) {
            tokens_.push_back(Token{TokenType::VarEnd, "", p});
            pos_ = p + 2;
            return {};
          }
        } else {
          const char sign = (s_[p] == '-' || s_[p] == '+') ? s_[p] : '\0';
          if (s_.compare(p + (sign ? 1 : 0), 2, "%}") == 0) {
            tokens_.push_back(Token{TokenType::BlockEnd, "", p});
            pos_ = after_block_end(p + (sign ? 3 : 2), sign);
            return {};
          }
        }
      }
      if (const size_t n = space_len(s_, p); n > 0) {
        p += n;
        continue;
      }
      auto next = lex_token(p, balance);
      if (!next) return next.error();
      p = *next;
    }
  }

  // One token inside a tag at p; returns the position after it.
  Result<size_t> lex_token(size_t p, std::vector<char>& balance) {
    const char c = s_[p];
    if (is_digit(c)) return lex_number(p);
    if (is_name_start(c)) {
      size_t e = p;
      while (e < s_.size() && is_name_char(s_[e])) ++e;
      tokens_.push_back(Token{TokenType::Name, std::string(s_.substr(p, e - p)), p});
      return e;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    static constexpr std::array<std::string_view, 6> kTwo = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (s_.compare(p, 2, op) == 0) {
        tokens_.push_back(Token{TokenType::Op, std::string(op), p});
        return p + 2;
      }
    }
    static constexpr std::string_view kOne = "+-/*%~[](){}><=.:|,;";
    if (kOne.find(c) == std::string_view::npos) {
      std::string shown;
      append_utf8(shown, decode_utf8(s_.substr(p, std::min<size_t>(4, s_.size() - p)))[0]);
      return fail(p, fmt::format("unexpected char '{}'", shown));
    }
    if (c == '(' || c == '[' || c == '{') balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) return fail(p, fmt::format("unexpected '{}'", c));
      if (balance.back() != c)
        return fail(p, fmt::format("unexpected '{}', expected '{}'", c, balance.back()));
      balance.pop_back();
    }
    tokens_.push_back(Token{TokenType::Op, std::string(1, c), p});
    return p + 1;
  }

  // Digits with optional single underscores between them ("1_000").
  size_t digits(size_t p) const {
    while (p < s_.size() && (is_digit(s_[p]) || (s_[p] == '_' && p + 1 < s_.size() && is_digit(s_[p + 1]))))
      ++p;
    return p;
  }

  Result<size_t> lex_number(size_t p) {
    size_t e = digits(p);
    bool is_float = false;
    const bool after_dot = p > 0 && s_[p - 1] == '.';  // "x.0.1" is x[0][1], as in Jinja
    if (after_dot) {
      // integer only
    } else if (e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
      e = digits(e + 1);
      is_float = true;
    }
    if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
      size_t q = e + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        e = digits(q);
        is_float = true;
      }
    }
    std::string spelled;
    for (char ch : s_.substr(p, e - p)) {
      if (ch != '_') spelled.push_back(ch);
    }
    Token t{is_float ? TokenType::Float : TokenType::Int, spelled, p};
    if (is_float) {
      t.float_value = std::strtod(spelled.c_str(), nullptr);
    } else {
      errno = 0;
      t.int_value = std::strtoll(spelled.c_str(), nullptr, 10);
      if (errno == ERANGE) return fail(p, fmt::format("integer literal {} is out of range", spelled));
    }
    tokens_.push_back(std::move(t));
    return e;
  }

  Result<size_t> lex_string(size_t p) {
    const char quote = s_[p];
    std::string out;
    size_t i = p + 1;
    while (true) {
      if (i >= s_.size()) return fail(p, "unterminated string literal");
      const char c = s_[i];
      if (c == quote) break;
      if (c != '\\') {
        out.push_back(c);
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) return fail(p, "unterminated string literal");
      auto esc = decode_escape(i, out);
      if (!esc) return esc.error();
      i = *esc;
    }
    tokens_.push_back(Token{TokenType::String, std::move(out), p});
    return i + 1;
  }

  // A backslash escape at s_[i] (Python's unicode-escape rules); appends it, returns the next index.
  Result<size_t> decode_escape(size_t i, std::string& out) {
    const char e = s_[i + 1];
    switch (e) {
      case '\n':
        return i + 2;
      case '\\':
        out.push_back('\\');
        return i + 2;
      case '\'':
        out.push_back('\'');
        return i + 2;
      case '"':
        out.push_back('"');
        return i + 2;
      case 'a':
        out.push_back('\a');
        return i + 2;
      case 'b':
        out.push_back('\b');
        return i + 2;
      case 'f':
        out.push_back('\f');
        return i + 2;
      case 'n':
        out.push_back('\n');
        return i + 2;
      case 'r':
        out.push_back('\r');
        return i + 2;
      case 't':
        out.push_back('\t');
        return i + 2;
      case 'v':
        out.push_back('\v');
        return i + 2;
      default:
        break;
    }
    if (e >= '0' && e <= '7') {
      size_t j = i + 1;
      unsigned v = 0;
      while (j < s_.size() && j < i + 4 && s_[j] >= '0' && s_[j] <= '7')
        v = v * 8 + static_cast<unsigned>(s_[j++] - '0');
      append_utf8(out, v);
      return j;
    }
    if (e == 'x' || e == 'u' || e == 'U') {
      const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      uint32_t v = 0;
      for (size_t k = 0; k < n; ++k) {
        const size_t j = i + 2 + k;
        const int h = j < s_.size() ? hex_value(s_[j]) : -1;
        if (h < 0) return fail(i, fmt::format("truncated \\{} escape in string literal", e));
        v = v * 16 + static_cast<uint32_t>(h);
      }
      if (v > 0x10FFFF) return fail(i, "\\U escape out of range in string literal");
      append_utf8(out, v);
      return i + 2 + n;
    }
    if (e == 'N') return fail(i, "\\N{...} escapes are not supported in string literals");
    out.push_back('\\');  // unknown escapes stay as written
    return i + 1;
  }

  const SourceText& src_;
  std::string_view s_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
};

}  // namespace

SourceText::SourceText(std::string_view raw) {
  text_.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      text_.push_back('\n');
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      text_.push_back(raw[i]);
    }
  }
  if (!text_.empty() && text_.back() == '\n') text_.pop_back();  // keep_trailing_newline=False
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

std::string SourceText::location(size_t offset) const {
  offset = std::min(offset, text_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t start = line_starts_[line - 1];
  const size_t col = codepoint_count(std::string_view(text_).substr(start, offset - start)) + 1;
  return fmt::format("{}:{}", line, col);
}

Result<std::vector<Token>> tokenize(const SourceText& src) { return Lexer(src).run(); }

}  // namespace glass::tokenizer::chat
