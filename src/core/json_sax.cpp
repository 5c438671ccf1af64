#include "core/json_sax.h"

#include <fmt/format.h>

#include <algorithm>

namespace glass::json_sax_detail {

bool number_too_large(std::string_view number) {
  // The decimal exponent of the leading digit: digits before the point (leading zeros not counted)
  // or, below 1, the zeros after it; plus the written exponent (saturated: its digits are many).
  size_t i = number.starts_with('-') ? 1 : 0;
  int64_t magnitude = 0;
  bool seen = false;  // a nonzero digit
  for (; i < number.size() && number[i] >= '0' && number[i] <= '9'; ++i) {
    if (number[i] != '0') seen = true;
    if (seen) ++magnitude;
  }
  if (seen) {
    --magnitude;
  } else if (i < number.size() && number[i] == '.') {
    for (++i; i < number.size() && number[i] == '0'; ++i) --magnitude;
    if (i == number.size() || number[i] < '1' || number[i] > '9') return false;  // zero
    --magnitude;
  } else {
    return false;  // zero
  }
  const size_t e = number.find_first_of("eE");
  if (e != std::string_view::npos) {
    size_t j = e + 1;
    const bool negative = j < number.size() && number[j] == '-';
    if (j < number.size() && (number[j] == '-' || number[j] == '+')) ++j;
    int64_t exponent = 0;
    for (; j < number.size(); ++j)
      exponent = std::min<int64_t>(exponent * 10 + (number[j] - '0'), 1'000'000'000);
    magnitude += negative ? -exponent : exponent;
  }
  return magnitude > 0;
}

std::string json_error_at(std::string_view text, size_t offset, std::string_view what) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
  const size_t line_start = before.rfind('\n');
  const size_t column = offset - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
  return fmt::format("line {}, column {}: {}", line, column, what);
}

}  // namespace glass::json_sax_detail
