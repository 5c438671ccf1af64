#include "tokenizer/chat/pystr.h"

#include <utf8proc.h>

#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/utf8.h"

namespace glass::tokenizer::chat {
namespace {

constexpr char32_t kEscapeBase = 0xDC80;  // surrogateescape: invalid byte b -> U+DC00 + b

utf8proc_category_t category(char32_t c) { return utf8proc_category(static_cast<utf8proc_int32_t>(c)); }

bool is_cased(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

bool is_alpha(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT ||
         cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

bool is_numeric(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

// str.isprintable() for one code point.
bool is_printable(char32_t c) {
  if (c == ' ') return true;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

char32_t to_upper(char32_t c) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_lower(char32_t c) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}
char32_t to_title(char32_t c) {
  return static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c)));
}

template <class F>
std::string map_codepoints(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode_utf8(s)) append_utf8(out, f(c));
  return out;
}

template <class P>
bool all_nonempty(std::string_view s, P p) {
  const std::u32string u = decode_utf8(s);
  if (u.empty()) return false;
  for (char32_t c : u) {
    if (!p(c)) return false;
  }
  return true;
}

// Splits on runs of whitespace (str.split() with no separator).
std::vector<std::string> split_whitespace(const std::u32string& u, int64_t maxsplit, size_t max_parts) {
  std::vector<std::string> parts;
  size_t i = 0;
  const size_t n = u.size();
  while (i < n && parts.size() <= max_parts) {
    while (i < n && is_py_space(u[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      size_t end = n;
      while (end > i && is_py_space(u[end - 1])) --end;
      parts.push_back(encode_utf8(u.substr(i, end - i)));
      return parts;
    }
    size_t j = i;
    while (j < n && !is_py_space(u[j])) ++j;
    parts.push_back(encode_utf8(u.substr(i, j - i)));
    i = j;
  }
  return parts;
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0 || cp < 0) {
      out.push_back(kEscapeBase - 0x80 + b);
      ++i;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<size_t>(n);
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp >= kEscapeBase && cp <= kEscapeBase + 0x7F) {
    out.push_back(static_cast<char>(cp - kEscapeBase + 0x80));
  } else {
    glass::append_utf8(out, static_cast<uint32_t>(cp));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t codepoint_count(std::string_view s) { return is_ascii(s) ? s.size() : decode_utf8(s).size(); }

bool is_py_space(char32_t c) {
  switch (c) {
    case ' ':
    case '\t':
    case '\n':
    case '\r':
    case 0x0B:
    case 0x0C:
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  const std::u32string u = decode_utf8(s);
  const std::u32string set = chars ? decode_utf8(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) { return chars ? set.find(c) != std::u32string::npos : is_py_space(c); };
  size_t b = 0, e = u.size();
  if (left) {
    while (b < e && strip_it(u[b])) ++b;
  }
  if (right) {
    while (e > b && strip_it(u[e - 1])) --e;
  }
  return encode_utf8(std::u32string_view(u).substr(b, e - b));
}

namespace {

// ASCII text (nearly all of a template's) case-mapped by byte: through code points a 1 MB string
// took ~10 ms, and sorting [1 MB string] * 1000 case-insensitively spent 8 s there before its limit.
std::string ascii_mapped(std::string_view s, char from, char to) {
  std::string out(s);
  for (char& c : out)
    if (c >= from && c <= to) c = static_cast<char>(c ^ 0x20);
  return out;
}

}  // namespace

std::string py_upper(std::string_view s) {
  return is_ascii(s) ? ascii_mapped(s, 'a', 'z') : map_codepoints(s, to_upper);
}
std::string py_lower(std::string_view s) {
  return is_ascii(s) ? ascii_mapped(s, 'A', 'Z') : map_codepoints(s, to_lower);
}
std::string py_swapcase(std::string_view s) {
  return map_codepoints(s, [](char32_t c) {
    const auto cat = category(c);
    if (cat == UTF8PROC_CATEGORY_LU) return to_lower(c);
    if (cat == UTF8PROC_CATEGORY_LL) return to_upper(c);
    return c;
  });
}

std::string py_capitalize(std::string_view s) {
  std::u32string u = decode_utf8(s);
  for (size_t i = 0; i < u.size(); ++i) u[i] = i == 0 ? to_title(u[i]) : to_lower(u[i]);
  return encode_utf8(u);
}

std::string py_title(std::string_view s) {
  std::u32string u = decode_utf8(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    c = prev_cased ? to_lower(c) : to_title(c);
    prev_cased = is_cased(c);
  }
  return encode_utf8(u);
}

bool py_is_upper(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode_utf8(s)) {
    const auto cat = category(c);
    if (cat == UTF8PROC_CATEGORY_LL) return false;
    if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) cased = true;
  }
  return cased;
}

bool py_is_lower(std::string_view s) {
  bool cased = false;
  for (char32_t c : decode_utf8(s)) {
    const auto cat = category(c);
    if (cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT) return false;
    if (cat == UTF8PROC_CATEGORY_LL) cased = true;
  }
  return cased;
}

bool py_is_alpha(std::string_view s) { return all_nonempty(s, is_alpha); }
bool py_is_digit(std::string_view s) {
  return all_nonempty(s, [](char32_t c) { return category(c) == UTF8PROC_CATEGORY_ND; });
}
bool py_is_alnum(std::string_view s) {
  return all_nonempty(s, [](char32_t c) { return is_alpha(c) || is_numeric(c); });
}
bool py_is_space(std::string_view s) {
  return all_nonempty(s, [](char32_t c) { return is_py_space(c); });
}

std::string py_repr_str(std::string_view s) {
  const std::u32string u = decode_utf8(s);
  const bool has_single = u.find(U'\'') != std::u32string::npos;
  const bool has_double = u.find(U'"') != std::u32string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : u) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x80 || is_printable(c)) {
      append_utf8(out, c);
    } else {
      char buf[16];
      if (c <= 0xFF) {
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      } else if (c <= 0xFFFF) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      } else {
        std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      }
      out += buf;
    }
  }
  out.push_back(quote);
  return out;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: [-]d[.ddd]e[+-]x.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out.push_back('-');
    i = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k) {
    if (sci[k] != '.') digits.push_back(sci[k]);
  }
  const int exp10 = std::stoi(sci.substr(e_pos + 1));
  if (exp10 < -4 || exp10 >= 16) {
    out.push_back(digits[0]);
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    return out + eb;
  }
  if (exp10 < 0) {
    out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    return out;
  }
  const auto int_len = static_cast<size_t>(exp10) + 1;
  if (digits.size() <= int_len) {
    out += digits + std::string(int_len - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, int_len) + "." + digits.substr(int_len);
  }
  return out;
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  size_t max_parts) {
  if (!sep) return split_whitespace(decode_utf8(s), maxsplit, max_parts);
  std::vector<std::string> parts;
  size_t start = 0;
  while ((maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) && parts.size() <= max_parts) {
    const size_t p = s.find(*sep, start);
    if (p == std::string_view::npos) break;
    parts.emplace_back(s.substr(start, p - start));
    start = p + sep->size();
  }
  parts.emplace_back(s.substr(start));
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit, size_t max_parts) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit, max_parts);
  std::vector<std::string> parts;
  if (!sep) {
    std::u32string u = decode_utf8(s);
    size_t end = u.size();
    while (end > 0 && parts.size() <= max_parts) {
      while (end > 0 && is_py_space(u[end - 1])) --end;
      if (end == 0) break;
      if (static_cast<int64_t>(parts.size()) == maxsplit) {
        size_t b = 0;
        while (b < end && is_py_space(u[b])) ++b;
        parts.push_back(encode_utf8(u.substr(b, end - b)));
        break;
      }
      size_t b = end;
      while (b > 0 && !is_py_space(u[b - 1])) --b;
      parts.push_back(encode_utf8(u.substr(b, end - b)));
      end = b;
    }
  } else {
    size_t end = s.size();
    while (static_cast<int64_t>(parts.size()) < maxsplit && end >= sep->size() && parts.size() <= max_parts) {
      const size_t p = s.rfind(*sep, end - sep->size());
      if (p == std::string_view::npos) break;
      parts.emplace_back(s.substr(p + sep->size(), end - p - sep->size()));
      end = p;
    }
    parts.emplace_back(s.substr(0, end));
  }
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends, size_t max_parts) {
  const std::u32string u = decode_utf8(s);
  std::vector<std::string> lines;
  size_t start = 0, i = 0;
  auto is_break = [](char32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
  };
  while (i < u.size() && lines.size() <= max_parts) {
    if (!is_break(u[i])) {
      ++i;
      continue;
    }
    size_t eol = i + 1;
    if (u[i] == '\r' && eol < u.size() && u[eol] == '\n') ++eol;
    lines.push_back(encode_utf8(u.substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < u.size()) lines.push_back(encode_utf8(u.substr(start)));
  return lines;
}

std::string py_replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count) {
  std::string out;
  if (old_s.empty()) {
    const std::u32string u = decode_utf8(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        out += new_s;
        ++done;
      }
      if (i < u.size()) append_utf8(out, u[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t p = s.find(old_s, start);
    if (p == std::string_view::npos) break;
    out += s.substr(start, p - start);
    out += new_s;
    start = p + old_s.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool reverse) {
  const size_t p = reverse ? s.rfind(sub) : s.find(sub);
  if (p == std::string_view::npos) return -1;
  return static_cast<int64_t>(codepoint_count(s.substr(0, p)));
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(codepoint_count(s)) + 1;
  int64_t n = 0;
  for (size_t p = s.find(sub); p != std::string_view::npos; p = s.find(sub, p + sub.size())) ++n;
  return n;
}

}  // namespace glass::tokenizer::chat
