#include "tokenizer/unicode.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdlib>
#include <memory>

#include "core/utf8.h"

namespace glass::tokenizer::unicode {
namespace {

bool is_continuation(uint8_t c) { return (c & 0xC0) == 0x80; }

// The valid range of the byte after lead byte `lead` (RFC 3629 table 3-7).
bool valid_second(uint8_t lead, uint8_t second) {
  if (lead == 0xE0) return second >= 0xA0 && second <= 0xBF;
  if (lead == 0xED) return second >= 0x80 && second <= 0x9F;
  if (lead == 0xF0) return second >= 0x90 && second <= 0xBF;
  if (lead == 0xF4) return second >= 0x80 && second <= 0x8F;
  return is_continuation(second);
}

// Sequence length a well-formed lead byte announces, or 0.
uint32_t sequence_length(uint8_t c) {
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) return 3;
  if (c >= 0xF0 && c <= 0xF4) return 4;
  return 0;
}

// How many bytes from `pos` are a well-formed sequence (returned as positive) or, when ill-formed,
// how many bytes form the maximal ill-formed prefix (returned as negative).
int scan(std::string_view s, size_t pos) {
  const auto lead = static_cast<uint8_t>(s[pos]);
  const uint32_t len = sequence_length(lead);
  if (len == 0) return -1;
  if (len == 1) return 1;
  for (uint32_t k = 1; k < len; ++k) {
    if (pos + k >= s.size()) return -static_cast<int>(k);
    const auto c = static_cast<uint8_t>(s[pos + k]);
    if (k == 1 ? !valid_second(lead, c) : !is_continuation(c)) return -static_cast<int>(k);
  }
  return static_cast<int>(len);
}

constexpr bool printable_byte(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

constexpr std::array<uint16_t, 256> make_byte_map() {
  std::array<uint16_t, 256> m{};
  uint16_t n = 0;
  for (int b = 0; b < 256; ++b)
    m[static_cast<size_t>(b)] = printable_byte(b) ? static_cast<uint16_t>(b) : 256 + n++;
  return m;
}
constexpr std::array<uint16_t, 256> kByteToChar = make_byte_map();

// The bytes that map above U+00FF, indexed by cp - 256.
constexpr std::array<uint8_t, 68> make_high_bytes() {
  std::array<uint8_t, 68> h{};
  for (int b = 0; b < 256; ++b) {
    if (kByteToChar[static_cast<size_t>(b)] >= 256)
      h[kByteToChar[static_cast<size_t>(b)] - 256u] = static_cast<uint8_t>(b);
  }
  return h;
}
constexpr std::array<uint8_t, 68> kHighBytes = make_high_bytes();

utf8proc_category_t category(uint32_t cp) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
}

}  // namespace

Char decode(std::string_view s, size_t pos) {
  const int n = scan(s, pos);
  if (n < 0) return {kReplacement, 1, false};
  const auto b0 = static_cast<uint8_t>(s[pos]);
  uint32_t cp = 0;
  switch (n) {
    case 1:
      cp = b0;
      break;
    case 2:
      cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(s[pos + 1]) & 0x3Fu);
      break;
    case 3:
      cp = ((b0 & 0x0Fu) << 12) | ((static_cast<uint8_t>(s[pos + 1]) & 0x3Fu) << 6) |
           (static_cast<uint8_t>(s[pos + 2]) & 0x3Fu);
      break;
    default:
      cp = ((b0 & 0x07u) << 18) | ((static_cast<uint8_t>(s[pos + 1]) & 0x3Fu) << 12) |
           ((static_cast<uint8_t>(s[pos + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(s[pos + 3]) & 0x3Fu);
      break;
  }
  return {cp, static_cast<uint32_t>(n), true};
}

void append(std::string& out, uint32_t cp) { append_utf8(out, cp); }

size_t first_invalid(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = scan(s, i);
    if (n < 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::string_view::npos;
}

std::string lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int n = scan(s, i);
    if (n > 0) {
      out.append(s.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      append(out, kReplacement);
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

size_t lead_length(char c) {
  static constexpr std::array<uint8_t, 16> kLen = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[static_cast<uint8_t>(c) >> 4];
}

bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

bool is_letter(uint32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}
bool is_number(uint32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}
bool is_punctuation(uint32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}
bool is_symbol(uint32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_SM && c <= UTF8PROC_CATEGORY_SO;
}
bool is_mark(uint32_t cp) {
  const auto c = category(cp);
  return c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME;
}
bool is_nonspacing_mark(uint32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }
bool is_other(uint32_t cp) {
  const auto c = category(cp);
  return c == UTF8PROC_CATEGORY_CN || (c >= UTF8PROC_CATEGORY_CC && c <= UTF8PROC_CATEGORY_CO);
}
bool is_word(uint32_t cp) {
  const auto c = category(cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ME) || c == UTF8PROC_CATEGORY_ND ||
         c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D;
}
bool is_bert_punctuation(uint32_t cp) {
  const bool ascii =
      (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
  return ascii || is_punctuation(cp);
}

Result<std::string> normalize(std::string_view s, Form form) {
  if (s.empty()) return std::string();
  int options = UTF8PROC_STABLE;
  switch (form) {
    case Form::Nfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case Form::Nfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case Form::Nfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case Form::Nfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                   static_cast<utf8proc_ssize_t>(s.size()), &dst, static_cast<utf8proc_option_t>(options));
  const std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(dst, &std::free);
  if (n < 0) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("tokenizer: cannot normalize text: {}", utf8proc_errmsg(n)));
  }
  return std::string(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
}

uint32_t to_lower(uint32_t cp) {
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

std::string to_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const Char c = decode(s, i);
    if (!c.valid) {
      out += s[i];
    } else if (c.cp == 0x130) {  // the one unconditional multi-character lowercase mapping
      out += "i\xCC\x87";
    } else if (c.cp < 0x80) {
      out += static_cast<char>(c.cp >= 'A' && c.cp <= 'Z' ? c.cp + 32 : c.cp);
    } else {
      append(out, to_lower(c.cp));
    }
    i += c.len;
  }
  return out;
}

uint32_t byte_to_char(uint8_t b) { return kByteToChar[b]; }

int char_to_byte(uint32_t cp) {
  if (cp < 256) return printable_byte(static_cast<int>(cp)) ? static_cast<int>(cp) : -1;
  if (cp < 256 + kHighBytes.size()) return kHighBytes[cp - 256];
  return -1;
}

std::string bytes_to_chars(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) append(out, kByteToChar[static_cast<uint8_t>(c)]);
  return out;
}

}  // namespace glass::tokenizer::unicode
