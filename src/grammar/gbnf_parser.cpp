// The GBNF reader: a recursive-descent parser over the text, depth-bounded (kMaxNesting) so that
// deeply nested groups are an error and not a stack overflow.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "grammar/gbnf.h"

namespace glass::grammar {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < t_.size(); ++i)
      if (t_[i] == '\n') line_starts_.push_back(i + 1);
  }

  Result<std::vector<RuleDef>> run() {
    std::vector<RuleDef> rules;
    skip_space(true);
    while (!at_end()) {
      RuleDef r;
      r.line = line_of(pos_);
      r.col = col_of(pos_);
      r.name = name();
      if (r.name.empty()) return fail("expected a rule name");
      skip_space(false);
      if (t_.substr(pos_, 3) != "::=")
        return fail(fmt::format("expected '::=' after rule name '{}'", r.name));
      pos_ += 3;
      skip_space(true);
      if (!alternatives(r.body, 0)) return *error_;
      skip_space(false);
      if (!at_end() && t_[pos_] != '\n' && t_[pos_] != '\r')
        return fail(fmt::format("unexpected '{}' in rule '{}'", t_[pos_], r.name));
      rules.push_back(std::move(r));
      skip_space(true);
    }
    if (rules.empty()) return make_error(ErrorCode::InvalidArgument, "grammar: no rules");
    return rules;
  }

 private:
  bool at_end() const { return pos_ >= t_.size(); }
  // Line starts, found once: every element records its line and column (for lowering's errors),
  // so a scan from the start per element would make parsing quadratic in the grammar's size.
  int line_of(size_t p) const {
    return static_cast<int>(std::upper_bound(line_starts_.begin(), line_starts_.end(), p) -
                            line_starts_.begin());
  }
  int col_of(size_t p) const {
    return static_cast<int>(p - line_starts_[static_cast<size_t>(line_of(p) - 1)]) + 1;
  }
  Error fail(const std::string& what) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("grammar: line {}, column {}: {}", line_of(pos_), col_of(pos_), what));
  }
  bool set_fail(const std::string& what) {
    if (!error_) error_ = fail(what);
    return false;
  }

  // Spaces, tabs and comments; newlines too when `newlines` (inside groups, after ::= and |).
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && t_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  // At a newline outside groups: a following line that starts with '|' continues the rule.
  bool continues_on_next_line() {
    size_t p = pos_;
    while (p < t_.size()) {
      const char c = t_[p];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p;
      } else if (c == '#') {
        while (p < t_.size() && t_[p] != '\n') ++p;
      } else {
        break;
      }
    }
    if (p < t_.size() && t_[p] == '|') {
      pos_ = p;
      return true;
    }
    return false;
  }

  static bool word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  }
  std::string name() {
    const size_t s = pos_;
    while (!at_end() && word_char(t_[pos_])) ++pos_;
    return std::string(t_.substr(s, pos_ - s));
  }

  bool alternatives(Expr& out, size_t depth) {
    if (depth > kMaxNesting) return set_fail(fmt::format("groups nested deeper than {}", kMaxNesting));
    out.kind = Expr::Alt;
    out.line = line_of(pos_);
    while (true) {
      Expr seq;
      if (!sequence(seq, depth)) return false;
      out.items.push_back(std::move(seq));
      if (!at_end() && t_[pos_] == '|') {
        ++pos_;
        skip_space(true);
        continue;
      }
      if (depth == 0 && !at_end() && (t_[pos_] == '\n' || t_[pos_] == '\r') && continues_on_next_line()) {
        ++pos_;
        skip_space(true);
        continue;
      }
      return true;
    }
  }

  bool sequence(Expr& out, size_t depth) {
    out.kind = Expr::Seq;
    const bool nested = depth > 0;
    while (!at_end()) {
      const char c = t_[pos_];
      Expr item;
      item.line = line_of(pos_);
      item.col = col_of(pos_);
      if (c == '"') {
        ++pos_;
        item.kind = Expr::Literal;
        while (true) {
          if (at_end() || t_[pos_] == '\n') return set_fail("unterminated string literal");
          if (t_[pos_] == '"') break;
          uint32_t cp = 0;
          if (!char_at(cp)) return false;
          append_utf8(item.bytes, cp);
        }
        ++pos_;
      } else if (c == '[') {
        ++pos_;
        item.kind = Expr::Class;
        bool negated = false;
        if (!at_end() && t_[pos_] == '^') {
          negated = true;
          ++pos_;
        }
        CodeRanges r;
        while (true) {
          if (at_end() || t_[pos_] == '\n') return set_fail("unterminated character class");
          if (t_[pos_] == ']') break;
          uint32_t lo = 0, hi = 0;
          if (!char_at(lo)) return false;
          hi = lo;
          if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
            ++pos_;
            if (!char_at(hi)) return false;
            if (hi < lo) return set_fail("character range is out of order");
          }
          r.push_back({lo, hi});
        }
        ++pos_;
        item.ranges = normalize_ranges(std::move(r));
        if (negated) item.ranges = complement_ranges(item.ranges);
      } else if (c == '.') {
        ++pos_;
        item.kind = Expr::Class;
        item.ranges = {{0, 0x10FFFF}};
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        if (!alternatives(item, depth + 1)) return false;
        skip_space(true);
        if (at_end() || t_[pos_] != ')') return set_fail("expected ')'");
        ++pos_;
      } else if (word_char(c)) {
        const size_t save = pos_;
        item.kind = Expr::Ref;
        item.name = name();
        // `name ::=` starts the next rule: this sequence ended at a line break inside a group.
        size_t p = pos_;
        while (p < t_.size() && (t_[p] == ' ' || t_[p] == '\t')) ++p;
        if (t_.substr(p, 3) == "::=") {
          pos_ = save;
          return set_fail(
              fmt::format("rule '{}' starts before the previous rule's group is closed", item.name));
        }
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (out.items.empty()) return set_fail(fmt::format("'{}' with nothing before it to repeat", c));
        Expr& last = out.items.back();
        uint32_t mn = 0, mx = kUnbounded;
        if (c == '*') {
          ++pos_;
        } else if (c == '+') {
          mn = 1;
          ++pos_;
        } else if (c == '?') {
          mx = 1;
          ++pos_;
        } else {
          ++pos_;
          skip_space(nested);
          if (!number(mn)) return false;
          skip_space(nested);
          if (!at_end() && t_[pos_] == ',') {
            ++pos_;
            skip_space(nested);
            if (!at_end() && t_[pos_] >= '0' && t_[pos_] <= '9') {
              if (!number(mx)) return false;
            }
          } else {
            mx = mn;
          }
          skip_space(nested);
          if (at_end() || t_[pos_] != '}') return set_fail("expected '}' to end a repetition");
          ++pos_;
          if (mx != kUnbounded && mx < mn)
            return set_fail(fmt::format("repetition {{{},{}}}: max below min", mn, mx));
        }
        Expr rep;
        rep.kind = Expr::Repeat;
        rep.min = mn;
        rep.max = mx;
        rep.line = last.line;
        rep.col = last.col;
        rep.items.push_back(std::move(last));
        last = std::move(rep);
        skip_space(nested);
        continue;
      } else {
        break;
      }
      out.items.push_back(std::move(item));
      skip_space(nested);
    }
    return true;
  }

  bool number(uint32_t& v) {
    if (at_end() || t_[pos_] < '0' || t_[pos_] > '9') return set_fail("expected a number in a repetition");
    uint64_t x = 0;
    while (!at_end() && t_[pos_] >= '0' && t_[pos_] <= '9') {
      x = x * 10 + static_cast<uint64_t>(t_[pos_] - '0');
      if (x > kMaxRepeat) return set_fail(fmt::format("repetition count over {}", kMaxRepeat));
      ++pos_;
    }
    v = static_cast<uint32_t>(x);
    return true;
  }

  bool hex(int digits, uint32_t& v) {
    v = 0;
    for (int i = 0; i < digits; ++i) {
      if (at_end()) return set_fail("incomplete hex escape");
      const char c = t_[pos_++];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return set_fail("bad hex digit in escape");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (v > 0x10FFFF) return set_fail("code point beyond U+10FFFF");
    return true;
  }

  // One character of a literal or class (an escape or one UTF-8 encoded code point).
  bool char_at(uint32_t& cp) {
    const auto c = static_cast<uint8_t>(t_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (at_end()) return set_fail("escape at end of input");
      const char e = t_[pos_++];
      switch (e) {
        case 'n':
          cp = '\n';
          return true;
        case 'r':
          cp = '\r';
          return true;
        case 't':
          cp = '\t';
          return true;
        case '0':
          cp = 0;
          return true;
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'':
        case '.':
        case '/':
          cp = static_cast<uint8_t>(e);
          return true;
        case 'x':
          return hex(2, cp);
        case 'u':
          return hex(4, cp);
        case 'U':
          return hex(8, cp);
        default:
          pos_ -= 2;
          return set_fail(fmt::format("unknown escape '\\{}'", e));
      }
    }
    // UTF-8 decode (the grammar text itself must be valid UTF-8).
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + static_cast<size_t>(n) > t_.size()) return set_fail("invalid UTF-8 in grammar text");
    cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int i = 1; i < n; ++i) {
      const auto k = static_cast<uint8_t>(t_[pos_ + static_cast<size_t>(i)]);
      if ((k & 0xC0) != 0x80) return set_fail("invalid UTF-8 in grammar text");
      cp = (cp << 6) | (k & 0x3F);
    }
    pos_ += static_cast<size_t>(n);
    return true;
  }

  std::string_view t_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  std::optional<Error> error_;
};

}  // namespace

Result<std::vector<RuleDef>> parse_gbnf(std::string_view text) { return Parser(text).run(); }

}  // namespace glass::grammar
