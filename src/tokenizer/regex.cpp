#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include <array>
#include <cctype>

#include "tokenizer/unicode.h"

namespace glass::tokenizer {
namespace {

// Oniguruma's Unicode \s (the White_Space property) and Rust regex's \w, as class contents.
constexpr std::string_view kSpaceClass =
    "\\t\\n\\x{0B}\\f\\r "
    "\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
constexpr std::string_view kWordClass = "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200C}\\x{200D}";

std::string pcre2_message(int code) {
  std::array<PCRE2_UCHAR, 256> buf{};
  const int n = pcre2_get_error_message(code, buf.data(), buf.size());
  if (n < 0) return fmt::format("PCRE2 error {}", code);
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<size_t>(n));
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::string translate_onig_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size();) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's' || e == 'w') {
        const std::string_view cls = e == 's' ? kSpaceClass : kWordClass;
        if (in_class) {
          out += cls;
        } else {
          out += '[';
          out += cls;
          out += ']';
        }
      } else if ((e == 'S' || e == 'W') && !in_class) {
        out += "[^";
        out += e == 'S' ? kSpaceClass : kWordClass;
        out += ']';
      } else {
        out += c;
        out += e;
        if ((e == 'p' || e == 'P' || e == 'x') && i + 2 < p.size() && p[i + 2] == '{') {
          const size_t close = p.find('}', i + 2);
          const size_t end = close == std::string_view::npos ? p.size() : close + 1;
          out += p.substr(i + 2, end - (i + 2));
          i = end;
          continue;
        }
      }
      i += 2;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      ++i;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ']' is literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:]
      const size_t close = p.find(":]", i + 2);
      const size_t end = close == std::string_view::npos ? p.size() : close + 2;
      out += p.substr(i, end - i);
      i = end;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
    ++i;
  }
  return out;
}

Result<Regex> Regex::compile(std::string_view pattern) {
  const std::string translated = translate_onig_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (code == nullptr) {
    if (unicode::first_invalid(pattern) != std::string_view::npos) {
      return make_error(ErrorCode::InvalidArgument, "tokenizer: regex pattern is not valid UTF-8");
    }
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("tokenizer: cannot compile regex '{}': {} (at offset {} of '{}')", pattern,
                                  pcre2_message(error), offset, translated));
  }
  // JIT is an optimisation only: a pattern it cannot handle still runs interpreted.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex r;
  auto holder = std::make_shared<Code>();
  holder->code = code;
  r.code_ = std::move(holder);
  r.pattern_ = std::string(pattern);
  return r;
}

Result<Regex> Regex::literal(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) escaped += '\\';
    escaped += c;
  }
  return compile(escaped);
}

Status Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  if (const size_t bad = unicode::first_invalid(text); bad != std::string_view::npos) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("tokenizer: text is not valid UTF-8 (byte {} at offset {})",
                                  static_cast<uint8_t>(text[bad]), bad));
  }
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  if (!md) return make_error(ErrorCode::Internal, "tokenizer: cannot allocate PCRE2 match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  size_t last_end = std::string_view::npos;  // end of the previous match
  while (pos <= text.size()) {
    uint32_t options = PCRE2_NO_UTF_CHECK;
    int rc = pcre2_match(code_->code, subject, text.size(), pos, options, md.get(), nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      rc = pcre2_match(code_->code, subject, text.size(), pos, options | PCRE2_NO_JIT, md.get(), nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("tokenizer: regex '{}' failed on a text of {} bytes: {}", pattern_,
                                    text.size(), pcre2_message(rc)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t begin = ov[0], end = ov[1];
    if (begin == end) {
      // An empty match right after a match adds nothing; elsewhere it is a split point.
      if (begin != last_end) out.emplace_back(begin, end);
      if (begin >= text.size()) break;
      pos = begin + unicode::lead_length(text[begin]);
      if (pos > text.size()) pos = text.size();
    } else {
      out.emplace_back(begin, end);
      pos = end;
    }
    last_end = end;
  }
  return {};
}

}  // namespace glass::tokenizer
