#pragma once
// A strict JSON (RFC 8259) event parser: the text is walked once, iteratively (nesting costs a byte of
// stack per level, never a call), and a handler is told each value as it is read. It accepts what
// nlohmann's strict parse accepts — one value, a UTF-8 byte-order mark before it, whitespace around,
// strings of well-formed UTF-8 with paired surrogate escapes, numbers that fit a double — and reports
// the same events (but for a NUL byte after the value, where nlohmann's text ends and this parser
// sees a byte that is not JSON), so the readers that build from events (core/json_bounded, tokenizer.json)
// need no DOM. Written for speed on large files: a string is scanned eight bytes at a time and appended in
// runs, not a character at a time (nlohmann's lexer was ~40% of a 100 MB tokenizer.json's load).
//
// The handler, each call returning false to stop the parse (a budget spent, say):
//   bool null(); bool boolean(bool); bool number_integer(int64_t);  // negative integers
//   bool number_unsigned(uint64_t); bool number_float(double);      // integers past 64 bits: floats
//   bool string(std::string&); bool key(std::string&);            // the handler may move from them
//   bool start_object(); bool end_object(); bool start_array(); bool end_array();
#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace glass {

struct JsonSaxResult {
  enum class Outcome : uint8_t {
    Parsed,   // one whole value, and nothing but whitespace after it
    Stopped,  // the handler returned false
    Invalid,  // not JSON: `message` says where ("line 3, column 7: ...") and what
    TooDeep,  // containers nested past the bound given; `offset` is the opening bracket's byte
  };
  Outcome outcome = Outcome::Parsed;
  size_t offset = 0;  // the byte at fault
  std::string message;

  bool parsed() const { return outcome == Outcome::Parsed; }
};

namespace json_sax_detail {

// Bytes a string's fast scan stops at: '"', '\\', controls and the first byte of a UTF-8 sequence.
inline bool stops_string(unsigned char c) { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80; }

// Whether any of the 8 bytes of `w` is one stops_string names (bit tricks on a 64-bit word).
inline bool any_stop(uint64_t w) {
  constexpr uint64_t ones = 0x0101010101010101ull;
  constexpr uint64_t highs = 0x8080808080808080ull;
  const uint64_t quote = w ^ (ones * '"');
  const uint64_t slash = w ^ (ones * '\\');
  const uint64_t zero_quote = (quote - ones) & ~quote;
  const uint64_t zero_slash = (slash - ones) & ~slash;
  const uint64_t below_space = (w - ones * 0x20) & ~w;  // a byte < 0x20 borrows into its high bit
  return ((zero_quote | zero_slash | below_space | w) & highs) != 0;
}

// The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF), or 0.
inline size_t utf8_length(const unsigned char* p, const unsigned char* end) {
  const unsigned char c = p[0];
  auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return p + i < end && p[i] >= lo && p[i] <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// Whether a number's decimal magnitude is past a double's range: from_chars reports a value out of
// range either way, and nlohmann (strtod) reads one too small as zero but refuses one too large.
bool number_too_large(std::string_view number);

// "line L, column C: what" for the byte at `offset` (columns count bytes, from 1).
std::string json_error_at(std::string_view text, size_t offset, std::string_view what);

class Scanner {
 public:
  explicit Scanner(std::string_view text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  template <class Handler>
  JsonSaxResult run(Handler& h, size_t max_depth) {
    // A byte-order mark may come first, as nlohmann allows.
    if (end_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;
    std::vector<bool> in_object;  // per open container: object (true) or array
    skip_space();
  value:
    if (p_ == end_) return invalid(end_of_text("a value"));
    switch (*p_) {
      case '{':
        if (max_depth != 0 && in_object.size() >= max_depth) return too_deep();
        if (!h.start_object()) return stopped();
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == '}') {
          ++p_;
          if (!h.end_object()) return stopped();
          goto after_value;
        }
        in_object.push_back(true);
        goto member;
      case '[':
        if (max_depth != 0 && in_object.size() >= max_depth) return too_deep();
        if (!h.start_array()) return stopped();
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == ']') {
          ++p_;
          if (!h.end_array()) return stopped();
          goto after_value;
        }
        in_object.push_back(false);
        goto value;
      case '"':
        if (!read_string()) return error_;
        if (!h.string(text_)) return stopped();
        goto after_value;
      case 't':
        if (!literal("true")) return error_;
        if (!h.boolean(true)) return stopped();
        goto after_value;
      case 'f':
        if (!literal("false")) return error_;
        if (!h.boolean(false)) return stopped();
        goto after_value;
      case 'n':
        if (!literal("null")) return error_;
        if (!h.null()) return stopped();
        goto after_value;
      default:
        if (*p_ == '-' || (*p_ >= '0' && *p_ <= '9')) {
          if (!read_number(h)) return error_;
          goto after_value;
        }
        return invalid(unexpected("a value"));
    }
  member:  // after '{' or ',' in an object, at the key (whitespace skipped)
    if (p_ == end_) return invalid(end_of_text("a string key"));
    if (*p_ != '"') return invalid(unexpected("a string key"));
    if (!read_string()) return error_;
    if (!h.key(text_)) return stopped();
    skip_space();
    if (p_ == end_) return invalid(end_of_text("':'"));
    if (*p_ != ':') return invalid(unexpected("':' after the key"));
    ++p_;
    skip_space();
    goto value;
  after_value:
    skip_space();
    if (in_object.empty()) {
      if (p_ != end_) return invalid(unexpected("the end of the text after the value"));
      return {};
    }
    if (p_ == end_) return invalid(end_of_text(in_object.back() ? "',' or '}'" : "',' or ']'"));
    if (*p_ == ',') {
      ++p_;
      skip_space();
      if (in_object.back()) goto member;
      goto value;
    }
    if (in_object.back() ? *p_ == '}' : *p_ == ']') {
      ++p_;
      const bool object = in_object.back();
      in_object.pop_back();
      if (!(object ? h.end_object() : h.end_array())) return stopped();
      goto after_value;
    }
    return invalid(unexpected(in_object.back() ? "',' or '}' after an object member"
                                               : "',' or ']' after an array element"));
  }

 private:
  void skip_space() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  size_t offset() const { return static_cast<size_t>(p_ - begin_); }

  std::string unexpected(std::string_view expected) const {
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c >= 0x20 && c < 0x7F) return fmt::format("expected {}, found '{}'", expected, *p_);
    return fmt::format("expected {}, found byte 0x{:02X}", expected, c);
  }
  static std::string end_of_text(std::string_view expected) {
    return fmt::format("the text ends where {} was expected", expected);
  }

  JsonSaxResult invalid(std::string_view what) {
    error_ = {JsonSaxResult::Outcome::Invalid, offset(),
              json_error_at({begin_, size_t(end_ - begin_)}, offset(), what)};
    return error_;
  }
  bool fail(std::string_view what) {
    invalid(what);
    return false;
  }
  JsonSaxResult stopped() const { return {JsonSaxResult::Outcome::Stopped, offset(), {}}; }
  JsonSaxResult too_deep() const { return {JsonSaxResult::Outcome::TooDeep, offset(), {}}; }

  bool literal(std::string_view word) {
    const size_t left = static_cast<size_t>(end_ - p_);
    const size_t n = std::min(left, word.size());
    size_t i = 0;
    while (i < n && p_[i] == word[i]) ++i;
    if (i == word.size()) {
      p_ += i;
      return true;
    }
    p_ += i;
    if (p_ == end_) return fail(fmt::format("the text ends inside '{}'", word));
    return fail(unexpected(fmt::format("'{}'", word)));
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Four hex digits after "\u" at p_ (p_ at the 'u'), leaving p_ past them.
  bool read_hex4(uint32_t& value) {
    ++p_;
    value = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      if (p_ == end_) return fail("the text ends inside a \\u escape");
      const int d = hex_value(*p_);
      if (d < 0) return fail(unexpected("a hex digit of a \\u escape"));
      value = value * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  bool read_escape() {  // p_ at the backslash
    ++p_;
    if (p_ == end_) return fail("the text ends inside an escape");
    char c;
    switch (*p_) {
      case '"':
        c = '"';
        break;
      case '\\':
        c = '\\';
        break;
      case '/':
        c = '/';
        break;
      case 'b':
        c = '\b';
        break;
      case 'f':
        c = '\f';
        break;
      case 'n':
        c = '\n';
        break;
      case 'r':
        c = '\r';
        break;
      case 't':
        c = '\t';
        break;
      case 'u': {
        const char* at = p_ - 1;
        uint32_t cp;
        if (!read_hex4(cp)) return false;
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          p_ = at;
          return fail("a \\u escape of a low surrogate (U+DC00..U+DFFF) must follow a high one");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
            p_ = at;
            return fail("a \\u escape of a high surrogate (U+D800..U+DBFF) must be followed by a low one");
          }
          ++p_;
          uint32_t low;
          if (!read_hex4(low)) return false;
          if (low < 0xDC00 || low > 0xDFFF) {
            p_ = at;
            return fail("a \\u escape of a high surrogate (U+D800..U+DBFF) must be followed by a low one");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(text_, cp);
        return true;
      }
      default:
        return fail(unexpected("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"));
    }
    text_ += c;
    ++p_;
    return true;
  }

  // The string at p_ (its opening quote) into text_, leaving p_ past the closing quote.
  bool read_string() {
    text_.clear();
    ++p_;
    const char* run = p_;
    for (;;) {
      while (end_ - p_ >= 8) {
        uint64_t w;
        std::memcpy(&w, p_, 8);
        if (any_stop(w)) break;
        p_ += 8;
      }
      while (p_ != end_ && !stops_string(static_cast<unsigned char>(*p_))) ++p_;
      if (p_ == end_) return fail("the text ends inside a string");
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        text_.append(run, p_);
        ++p_;
        return true;
      }
      if (c == '\\') {
        text_.append(run, p_);
        if (!read_escape()) return false;
        run = p_;
      } else if (c < 0x20) {
        return fail("a control character (below 0x20) in a string must be escaped");
      } else {
        const size_t n = utf8_length(reinterpret_cast<const unsigned char*>(p_),
                                     reinterpret_cast<const unsigned char*>(end_));
        if (n == 0) return fail("a string holds bytes that are not UTF-8");
        p_ += n;
      }
    }
  }

  static bool digit(char c) { return c >= '0' && c <= '9'; }

  template <class Handler>
  bool read_number(Handler& h) {
    const char* start = p_;
    const bool negative = *p_ == '-';
    if (negative) ++p_;
    if (p_ == end_) return fail("the text ends inside a number");
    if (!digit(*p_)) return fail(unexpected("a digit"));
    if (*p_ == '0')
      ++p_;
    else
      while (p_ != end_ && digit(*p_)) ++p_;
    bool fraction = false;
    if (p_ != end_ && *p_ == '.') {
      fraction = true;
      ++p_;
      if (p_ == end_) return fail("the text ends inside a number");
      if (!digit(*p_)) return fail(unexpected("a digit after '.'"));
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      fraction = true;
      ++p_;
      if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_) return fail("the text ends inside a number");
      if (!digit(*p_)) return fail(unexpected("a digit of the exponent"));
      while (p_ != end_ && digit(*p_)) ++p_;
    }
    if (!fraction) {
      if (negative) {
        int64_t v;
        if (std::from_chars(start, p_, v).ec == std::errc()) return h.number_integer(v) || stop_after();
      } else {
        uint64_t v;
        if (std::from_chars(start, p_, v).ec == std::errc()) return h.number_unsigned(v) || stop_after();
      }
    }
    double v = 0;
    const auto r = std::from_chars(start, p_, v);
    if (r.ec == std::errc::result_out_of_range) {
      const std::string_view number(start, static_cast<size_t>(p_ - start));
      if (number_too_large(number)) {
        p_ = start;
        return fail(fmt::format("the number {} is too large for a double", number));
      }
      v = negative ? -0.0 : 0.0;
    }
    return h.number_float(v) || stop_after();
  }

  // A handler that refused a number: the parse stops (error_ says so).
  bool stop_after() {
    error_ = stopped();
    return false;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::string text_;  // the string or key just read
  JsonSaxResult error_;
};

}  // namespace json_sax_detail

// Parses `text` as one JSON value, telling `handler` its events in order. Containers nested deeper
// than `max_depth` (0: no bound) stop the parse with TooDeep before the handler sees them.
template <class Handler>
JsonSaxResult parse_json_sax(std::string_view text, Handler& handler, size_t max_depth = 0) {
  return json_sax_detail::Scanner(text).run(handler, max_depth);
}

}  // namespace glass
