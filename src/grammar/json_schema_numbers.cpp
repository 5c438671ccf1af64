#include "grammar/json_schema_numbers.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace glass::grammar {
namespace {

constexpr int64_t kMax = 9999999999999999;  // 16 digits: what the unbounded integer rule writes

std::string join(const std::vector<std::string>& alts) {
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string digits(char lo, char hi) {
  return lo == hi ? fmt::format("\"{}\"", lo) : fmt::format("[{}-{}]", lo, hi);
}

// Decimal strings of one length from x to y (x <= y), as GBNF.
std::string same_length(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 0) return "";
  if (x == y) return "\"" + x + "\"";
  if (x[0] == y[0]) {
    const std::string rest = same_length(x.substr(1), y.substr(1));
    return fmt::format("\"{}\"", x[0]) + (rest.empty() ? "" : " " + rest);
  }
  const std::string tx = x.substr(1), ty = y.substr(1);
  const bool low_full = tx.find_first_not_of('0') == std::string::npos;
  const bool high_full = ty.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alts;
  char lo = x[0], hi = y[0];
  if (!low_full) {
    alts.push_back(fmt::format("\"{}\" {}", x[0], same_length(tx, std::string(n - 1, '9'))));
    ++lo;
  }
  if (!high_full) --hi;
  if (lo <= hi) alts.push_back(digits(lo, hi) + (n > 1 ? fmt::format(" [0-9]{{{}}}", n - 1) : ""));
  if (!high_full) alts.push_back(fmt::format("\"{}\" {}", y[0], same_length(std::string(n - 1, '0'), ty)));
  return join(alts);
}

// Non-negative integers in [a, b] written without leading zeros.
std::string nonneg_range(int64_t a, int64_t b) {
  std::vector<std::string> alts;
  int64_t start = 0, end = 9;
  for (int len = 1; len <= 16; ++len) {
    const int64_t x = std::max(a, start), y = std::min(b, end);
    if (x <= y) alts.push_back(same_length(std::to_string(x), std::to_string(y)));
    start = end + 1;
    end = end * 10 + 9;
  }
  return join(alts);
}

std::string int_range(int64_t lo, int64_t hi) {
  std::vector<std::string> alts;
  if (lo < 0) {
    const int64_t a = std::max<int64_t>(hi < 0 ? -hi : 1, 1), b = -lo;
    if (a <= b) alts.push_back("\"-\" " + nonneg_range(a, b));
  }
  if (hi >= 0) alts.push_back(nonneg_range(std::max<int64_t>(lo, 0), hi));
  return join(alts);
}

}  // namespace

void NumberBounds::set(const std::string& key, double v) {
  if (key == "minimum") minimum = v;
  if (key == "maximum") maximum = v;
  if (key == "exclusiveMinimum") exclusive_minimum = v;
  if (key == "exclusiveMaximum") exclusive_maximum = v;
}

Result<std::string> integer_range_gbnf(const NumberBounds& b) {
  double lo = -static_cast<double>(kMax), hi = static_cast<double>(kMax);
  if (b.minimum) lo = std::max(lo, std::ceil(*b.minimum));
  if (b.exclusive_minimum) lo = std::max(lo, std::floor(*b.exclusive_minimum) + 1);
  if (b.maximum) hi = std::min(hi, std::floor(*b.maximum));
  if (b.exclusive_maximum) hi = std::min(hi, std::ceil(*b.exclusive_maximum) - 1);
  if (std::isnan(lo) || std::isnan(hi))
    return make_error(ErrorCode::InvalidArgument, "integer bounds are not numbers");
  lo = std::max(lo, -static_cast<double>(kMax));
  hi = std::min(hi, static_cast<double>(kMax));
  if (lo > hi) return make_error(ErrorCode::InvalidArgument, "no integer lies within minimum/maximum");
  return int_range(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
}

Result<std::string> number_range_gbnf(const NumberBounds& b) {
  if (b.exclusive_minimum || b.exclusive_maximum)
    return make_error(
        ErrorCode::Unsupported,
        "keyword 'exclusiveMinimum'/'exclusiveMaximum' on a number is not supported (only on integers)");
  for (const auto& v : {b.minimum, b.maximum})
    if (v && (*v != std::floor(*v) || std::fabs(*v) > static_cast<double>(kMax)))
      return make_error(
          ErrorCode::Unsupported,
          fmt::format(
              "number bound {} is not a whole number; only whole minimum/maximum on numbers are supported",
              *v));
  // Plain values with flags (std::optional here trips GCC 12's maybe-uninitialized warning).
  const bool has_lo = b.minimum.has_value(), has_hi = b.maximum.has_value();
  const int64_t lo_v = has_lo ? static_cast<int64_t>(*b.minimum) : 0;
  const int64_t hi_v = has_hi ? static_cast<int64_t>(*b.maximum) : 0;
  const int64_t* lo = has_lo ? &lo_v : nullptr;
  const int64_t* hi = has_hi ? &hi_v : nullptr;
  if (lo && hi && *lo > *hi) return make_error(ErrorCode::InvalidArgument, "minimum above maximum");
  // x = sign, whole part i, fraction f (no exponent). With whole bounds: x >= L <=> i >= L for
  // x >= 0; x <= H <=> i < H, or i == H with an all-zero fraction. Negatives mirror it.
  const std::string frac = "(\".\" [0-9]{1,16})?";
  const std::string zero_frac = "(\".\" \"0\"{1,16})?";
  const std::string pos_frac = "\".\" \"0\"{0,15} [1-9] [0-9]{0,15}";
  std::vector<std::string> alts;
  // x >= 0: i in [max(L, 0), H).
  if (!hi || *hi >= 0) {
    const int64_t a = lo ? std::max<int64_t>(*lo, 0) : 0;
    if (!hi) {
      alts.push_back(nonneg_range(a, kMax) + " " + frac);
    } else {
      if (a <= *hi - 1) alts.push_back(nonneg_range(a, *hi - 1) + " " + frac);
      if (a <= *hi) alts.push_back(fmt::format("\"{}\" {}", *hi, zero_frac));
    }
  }
  // x < 0 as "-" y: y <= -L (i < -L any fraction, i == -L zero fraction); y >= -H when H < 0,
  // else y > 0 (i >= 1, or i == 0 with a non-zero fraction).
  if (!lo || *lo < 0) {
    const int64_t top = lo ? -*lo : kMax;  // y <= top
    const int64_t from = hi && *hi < 0 ? -*hi : 1;
    std::vector<std::string> neg;
    if (from <= top - 1) neg.push_back(nonneg_range(from, top - 1) + " " + frac);
    if (from <= top) neg.push_back(fmt::format("\"{}\" {}", top, zero_frac));
    if (!hi || *hi >= 0) neg.push_back("\"0\" " + pos_frac);
    if (!neg.empty()) alts.push_back("\"-\" " + join(neg));
  }
  if (alts.empty()) return make_error(ErrorCode::InvalidArgument, "no number lies within minimum/maximum");
  return join(alts);
}

}  // namespace glass::grammar
