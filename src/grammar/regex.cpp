// The regex reader: recursive descent into a GBNF expression text, which compile_gbnf then lowers
// like any grammar. In JSON mode every character the regex matches is emitted as JSON encodes it
// inside a string (a quote as \", a backslash as \\, \n as \\n), since the pattern constrains the
// decoded string but the model writes the encoded one.
#include "grammar/regex.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>

#include "grammar/ir.h"
#include "grammar/utf8_ranges.h"

namespace glass::grammar {
namespace {

std::string class_text(const CodeRanges& r) {
  std::string out = "[";
  for (const auto& [lo, hi] : r) {
    out += lo == hi ? fmt::format("\\U{:08X}", lo) : fmt::format("\\U{:08X}-\\U{:08X}", lo, hi);
  }
  return out + "]";
}

class RegexParser {
 public:
  RegexParser(std::string_view p, RegexMode mode) : p_(p), json_(mode == RegexMode::JsonSearch) {}

  Result<std::string> run() {
    std::string out;
    // Top-level alternatives, each with its own anchors.
    std::vector<std::string> alts;
    while (true) {
      bool start = false, end = false;
      if (peek('^')) {
        ++pos_;
        start = true;
      }
      std::string seq;
      if (!sequence(seq, 0, &end)) return *err_;
      if (json_) {
        // Unanchored ends match anything there (JSON Schema patterns search).
        if (!start) seq = fmt::format("{} {}", any_star(), seq);
        if (!end) seq = fmt::format("{} {}", seq, any_star());
      }  // Full mode: the text is the whole match already; anchors at the ends change nothing.
      alts.push_back(seq.empty() ? "\"\"" : seq);
      if (pos_ < p_.size() && p_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ != p_.size()) return fail(fmt::format("unexpected '{}'", p_[pos_]));
    if (alts.size() == 1) return alts[0];
    return fmt::format("({})", fmt::join(alts, " | "));
  }

 private:
  bool peek(char c) const { return pos_ < p_.size() && p_[pos_] == c; }
  Error fail(const std::string& what) {
    return make_error(ErrorCode::Unsupported, fmt::format("regex: at offset {}: {}", pos_, what));
  }
  bool set_fail(const std::string& what) {
    if (!err_) err_ = fail(what);
    return false;
  }

  // Any character the pattern's `.*` padding may match (JSON: any encoded string character).
  std::string any_star() const { return json_ ? "jchar*" : "[\\U00000000-\\U0010FFFF]*"; }

  // Characters as GBNF: raw mode a class; JSON mode the safe part as a class plus the escaped forms.
  std::string chars(const CodeRanges& r) const {
    if (!json_) return class_text(r);
    CodeRanges safe;
    std::vector<std::string> esc;
    for (const auto& [lo, hi] : r) {
      for (uint32_t c = lo; c <= hi && c < 0x20; ++c) {
        static constexpr std::pair<uint32_t, const char*> kShort[] = {
            {'\n', "\\\\n"}, {'\t', "\\\\t"}, {'\r', "\\\\r"}, {'\f', "\\\\f"}, {'\b', "\\\\b"}};
        for (const auto& [k, s] : kShort)
          if (k == c) esc.push_back(std::string("\"") + s + "\"");  // others: never written
      }
      const uint32_t a = std::max<uint32_t>(lo, 0x20);
      if (a > hi) continue;
      uint32_t from = a;
      for (const uint32_t special : {uint32_t{'"'}, uint32_t{'\\'}}) {
        if (special >= from && special <= hi) {
          if (special > from) safe.push_back({from, special - 1});
          esc.push_back(special == '"' ? "\"\\\\\\\"\"" : "\"\\\\\\\\\"");
          from = special + 1;
        }
      }
      if (from <= hi) safe.push_back({from, hi});
    }
    std::vector<std::string> alts;
    if (!safe.empty()) alts.push_back(class_text(safe));
    alts.insert(alts.end(), esc.begin(), esc.end());
    if (alts.empty()) return "";
    if (alts.size() == 1) return alts[0];
    return fmt::format("({})", fmt::join(alts, " | "));
  }

  bool sequence(std::string& out, size_t depth, bool* end_anchor) {
    while (pos_ < p_.size()) {
      const char c = p_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '$') {
        ++pos_;
        if (depth == 0 && end_anchor && (pos_ == p_.size() || p_[pos_] == '|')) {
          *end_anchor = true;
          break;
        }
        --pos_;
        return set_fail("'$' anchor only at the end of the pattern is supported");
      }
      if (c == '^') return set_fail("'^' anchor only at the start of the pattern is supported");
      std::string atom;
      if (!this->atom(atom, depth)) return false;
      if (!quantifier(atom)) return false;
      if (atom.empty()) return set_fail("a class that matches nothing JSON can encode");
      out = out.empty() ? atom : fmt::format("{} {}", out, atom);
    }
    return true;
  }

  bool quantifier(std::string& atom) {
    if (pos_ >= p_.size()) return true;
    const char c = p_[pos_];
    std::string q;
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const size_t save = pos_;
      ++pos_;
      auto num = [&](uint32_t& v) {
        const size_t s = pos_;
        uint64_t x = 0;
        while (pos_ < p_.size() && p_[pos_] >= '0' && p_[pos_] <= '9' && x <= kMaxRepeat)
          x = x * 10 + static_cast<uint64_t>(p_[pos_++] - '0');
        v = static_cast<uint32_t>(std::min<uint64_t>(x, kMaxRepeat + 1));
        return pos_ > s;
      };
      uint32_t mn = 0, mx = 0;
      if (!num(mn)) {
        pos_ = save;
        return set_fail("'{' that is not a quantifier {m,n}");
      }
      std::string body = std::to_string(mn);
      if (peek(',')) {
        ++pos_;
        body += ",";
        if (num(mx)) body += std::to_string(mx);
      }
      if (!peek('}')) return set_fail("unterminated quantifier");
      ++pos_;
      q = "{" + body + "}";
    } else {
      return true;
    }
    if (peek('?')) ++pos_;  // lazy: the same language
    if (peek('+')) return set_fail("possessive quantifiers are not supported");
    if (pos_ < p_.size() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '{'))
      return set_fail("a quantifier after a quantifier");
    atom = fmt::format("({}){}", atom, q);
    return true;
  }

  bool atom(std::string& out, size_t depth) {
    if (depth > kMaxNesting) return set_fail("groups nested too deeply");
    const char c = p_[pos_];
    if (c == '(') {
      ++pos_;
      if (peek('?')) {
        ++pos_;
        if (peek(':')) {
          ++pos_;
        } else if (peek('P') ||
                   (peek('<') && pos_ + 1 < p_.size() && p_[pos_ + 1] != '=' && p_[pos_ + 1] != '!')) {
          if (peek('P')) ++pos_;
          if (!peek('<')) return set_fail("unsupported group '(?P'");
          while (pos_ < p_.size() && p_[pos_] != '>') ++pos_;
          if (!peek('>')) return set_fail("unterminated group name");
          ++pos_;
        } else {
          --pos_;
          return set_fail("lookaround and inline flags ('(?') are not supported");
        }
      }
      std::vector<std::string> alts;
      while (true) {
        std::string seq;
        if (!sequence(seq, depth + 1, nullptr)) return false;
        alts.push_back(seq.empty() ? "\"\"" : seq);
        if (peek('|')) {
          ++pos_;
          continue;
        }
        break;
      }
      if (!peek(')')) return set_fail("missing ')'");
      ++pos_;
      out = fmt::format("({})", fmt::join(alts, " | "));
      return true;
    }
    if (c == '[') return char_class(out);
    if (c == '.') {
      ++pos_;
      // ECMA-262's '.' excludes every line terminator, Python's only \n: the intersection.
      out = chars(complement_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
      return true;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{')
      return set_fail(fmt::format("nothing to repeat before '{}'", c));
    CodeRanges r;
    if (c == '\\') {
      if (!escape(r, false)) return false;
    } else {
      uint32_t cp;
      if (!utf8(cp)) return false;
      r = {{cp, cp}};
    }
    out = chars(r);
    return true;
  }

  bool utf8(uint32_t& cp) {
    const auto c = static_cast<uint8_t>(p_[pos_]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + static_cast<size_t>(n) > p_.size()) return set_fail("invalid UTF-8");
    cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i)
      cp = (cp << 6) | (static_cast<uint8_t>(p_[pos_ + static_cast<size_t>(i)]) & 0x3F);
    pos_ += static_cast<size_t>(n);
    return true;
  }

  bool hex(int n, uint32_t& v) {
    v = 0;
    for (int i = 0; i < n; ++i) {
      if (pos_ >= p_.size()) return set_fail("incomplete hex escape");
      const char c = p_[pos_++];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return set_fail("bad hex digit");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  // After '\': the code points it stands for. `in_class`: inside [...], where \b is a backspace.
  bool escape(CodeRanges& r, bool in_class) {
    ++pos_;
    if (pos_ >= p_.size()) return set_fail("'\\' at the end of the pattern");
    const char e = p_[pos_++];
    static const CodeRanges kDigit = {{'0', '9'}};
    static const CodeRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const CodeRanges kSpace = {{'\t', '\r'}, {' ', ' '}};
    auto ascii_not = [](const CodeRanges& x) {
      CodeRanges c = complement_ranges(x);
      CodeRanges out;
      for (const auto& [lo, hi] : c)
        if (lo < 0x80) out.push_back({lo, std::min<uint32_t>(hi, 0x7F)});
      return out;
    };
    switch (e) {
      case 'd':
        r = kDigit;
        return true;
      case 'w':
        r = kWord;
        return true;
      case 's':
        r = kSpace;
        return true;
      case 'D':
        r = ascii_not(kDigit);
        return true;
      case 'W':
        r = ascii_not(kWord);
        return true;
      case 'S':
        r = ascii_not(kSpace);
        return true;
      case 'n':
        r = {{'\n', '\n'}};
        return true;
      case 't':
        r = {{'\t', '\t'}};
        return true;
      case 'r':
        r = {{'\r', '\r'}};
        return true;
      case 'f':
        r = {{'\f', '\f'}};
        return true;
      case 'v':
        r = {{'\v', '\v'}};
        return true;
      case '0':
        r = {{0, 0}};
        return true;
      case 'x': {
        uint32_t v;
        if (!hex(2, v)) return false;
        r = {{v, v}};
        return true;
      }
      case 'u': {
        uint32_t v;
        if (!hex(4, v)) return false;
        if (v >= 0xD800 && v <= 0xDFFF) return set_fail("surrogate \\u escapes are not supported");
        r = {{v, v}};
        return true;
      }
      case 'b':
        if (in_class) {
          r = {{'\b', '\b'}};
          return true;
        }
        pos_ -= 2;
        return set_fail("word boundary '\\b' is not supported");
      default:
        break;
    }
    if ((e >= '1' && e <= '9') || e == 'k') {
      pos_ -= 2;
      return set_fail("backreferences are not supported");
    }
    if (e == 'B' || e == 'A' || e == 'Z' || e == 'z' || e == 'G') {
      pos_ -= 2;
      return set_fail(fmt::format("anchor '\\{}' is not supported", e));
    }
    if (e == 'p' || e == 'P') {
      pos_ -= 2;
      return set_fail("Unicode property classes ('\\p') are not supported");
    }
    const std::string_view meta = "\\^$.|?*+()[]{}/-\"'#&~!@%,:;<=>`";
    if (meta.find(e) == std::string_view::npos) {
      pos_ -= 2;
      return set_fail(fmt::format("unknown escape '\\{}'", e));
    }
    r = {{static_cast<uint8_t>(e), static_cast<uint8_t>(e)}};
    return true;
  }

  bool char_class(std::string& out) {
    ++pos_;
    bool negated = false;
    if (peek('^')) {
      negated = true;
      ++pos_;
    }
    CodeRanges r;
    bool first = true;
    while (true) {
      if (pos_ >= p_.size()) return set_fail("unterminated character class");
      if (p_[pos_] == ']' && !first) break;
      first = false;
      CodeRanges item;
      if (p_[pos_] == '\\') {
        const char e = pos_ + 1 < p_.size() ? p_[pos_ + 1] : 0;
        if (negated && (e == 'D' || e == 'W' || e == 'S'))
          return set_fail(fmt::format("'\\{}' inside a negated class is not supported", e));
        if (!escape(item, true)) return false;
      } else if (p_[pos_] == '[' && pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
        return set_fail("POSIX classes ('[:') are not supported");
      } else {
        uint32_t cp;
        if (!utf8(cp)) return false;
        item = {{cp, cp}};
      }
      if (item.size() == 1 && item[0].first == item[0].second && peek('-') && pos_ + 1 < p_.size() &&
          p_[pos_ + 1] != ']') {
        ++pos_;
        CodeRanges hi;
        if (p_[pos_] == '\\') {
          if (!escape(hi, true)) return false;
        } else {
          uint32_t cp;
          if (!utf8(cp)) return false;
          hi = {{cp, cp}};
        }
        if (hi.size() != 1 || hi[0].first != hi[0].second)
          return set_fail("a class shorthand as a range end");
        if (hi[0].first < item[0].first) return set_fail("character range out of order");
        item = {{item[0].first, hi[0].first}};
      }
      r.insert(r.end(), item.begin(), item.end());
    }
    ++pos_;
    r = normalize_ranges(std::move(r));
    if (negated) r = complement_ranges(r);
    out = chars(r);
    return true;
  }

  std::string_view p_;
  bool json_;
  size_t pos_ = 0;
  std::optional<Error> err_;
};

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Result<std::string> regex_to_gbnf(std::string_view pattern, RegexMode mode) {
  return RegexParser(pattern, mode).run();
}

}  // namespace glass::grammar
