#include "grammar/json_schema_numbers.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "grammar/json_schema_converter.h"

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

// ---- multiples ------------------------------------------------------------------------------------

// The product of a digit-string range automaton with the remainder automaton r' = (10 r + d) mod m:
// rules for "k more digits, from remainder r, ending at remainder 0" (shared by every length) and
// for the few states still tight against a bound's digits (their remainder is fixed by the prefix).
class Multiples {
 public:
  Multiples(uint64_t m, const RuleSink& rule) : m_(m), rule_(rule) {}

  static constexpr size_t kMaxStates = 4096;
  bool overflow() const { return overflow_; }

  // Non-negative multiples in [a, b] written without leading zeros, or nullopt when there are none.
  std::optional<std::string> range(int64_t a, int64_t b) {
    std::vector<std::string> alts;
    int64_t start = 0, end = 9;
    for (int len = 1; len <= 16; ++len) {
      const int64_t x = std::max(a, start), y = std::min(b, end);
      if (x <= y) {
        xs_ = std::to_string(x);
        ys_ = std::to_string(y);
        tight_.clear();
        if (auto e = tight(0, true, true, 0)) alts.push_back(*e);
      }
      start = end + 1;
      end = end * 10 + 9;
    }
    if (alts.empty()) return std::nullopt;
    return join(alts);
  }

 private:
  static std::string digit_class(const std::vector<int>& ds) {
    if (ds.size() == 1) return fmt::format("\"{}\"", ds[0]);
    if (ds.size() == 10) return "[0-9]";
    std::string out = "[";
    for (const int d : ds) out += static_cast<char>('0' + d);
    return out + "]";
  }
  bool budget() {
    if (++states_ <= kMaxStates) return true;
    overflow_ = true;
    return false;
  }
  // Alternatives "digits then next" grouped by what follows.
  static std::optional<std::string> grouped(const std::vector<std::pair<int, std::string>>& steps) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<int>> by_next;
    for (const auto& [d, next] : steps) {
      if (!by_next.count(next)) order.push_back(next);
      by_next[next].push_back(d);
    }
    if (order.empty()) return std::nullopt;
    std::vector<std::string> alts;
    for (const auto& next : order)
      alts.push_back(digit_class(by_next[next]) + (next.empty() ? "" : " " + next));
    return alts.size() == 1 ? alts[0] : join(alts);
  }
  // Exactly k digits from remainder r to remainder 0 ("" when k == 0 and r == 0).
  std::optional<std::string> free(int k, uint64_t r) {
    if (k == 0) return r == 0 ? std::optional<std::string>("") : std::nullopt;
    const auto key = std::make_pair(k, r);
    if (auto it = free_.find(key); it != free_.end()) return it->second;
    if (!budget()) return std::nullopt;
    std::vector<std::pair<int, std::string>> steps;
    for (int d = 0; d <= 9 && !overflow_; ++d)
      if (auto next = free(k - 1, (10 * r + static_cast<uint64_t>(d)) % m_)) steps.push_back({d, *next});
    std::optional<std::string> out;
    if (auto body = grouped(steps)) out = rule_(fmt::format("mult-{}-{}", k, r), *body);
    free_[key] = out;
    return out;
  }
  std::optional<std::string> tight(size_t pos, bool lo, bool hi, uint64_t r) {
    const size_t n = xs_.size();
    if (!lo && !hi) return free(static_cast<int>(n - pos), r);
    if (pos == n) return r == 0 ? std::optional<std::string>("") : std::nullopt;
    const auto key = std::make_tuple(pos, lo, hi, r);
    if (auto it = tight_.find(key); it != tight_.end()) return it->second;
    if (!budget()) return std::nullopt;
    const int dlo = lo ? xs_[pos] - '0' : 0, dhi = hi ? ys_[pos] - '0' : 9;
    std::vector<std::pair<int, std::string>> steps;
    for (int d = dlo; d <= dhi && !overflow_; ++d)
      if (auto next =
              tight(pos + 1, lo && d == dlo, hi && d == dhi, (10 * r + static_cast<uint64_t>(d)) % m_))
        steps.push_back({d, *next});
    std::optional<std::string> out = grouped(steps);
    if (out && out->find(' ') != std::string::npos) out = rule_("mult-edge", *out);
    tight_[key] = out;
    return out;
  }

  uint64_t m_;
  const RuleSink& rule_;
  std::string xs_, ys_;
  std::map<std::pair<int, uint64_t>, std::optional<std::string>> free_;
  std::map<std::tuple<size_t, bool, bool, uint64_t>, std::optional<std::string>> tight_;
  size_t states_ = 0;
  bool overflow_ = false;
};

// ---- decimals -------------------------------------------------------------------------------------

__extension__ typedef __int128 i128;

i128 pow10(int k) {
  i128 v = 1;
  for (int i = 0; i < k; ++i) v *= 10;
  return v;
}
constexpr int kFrac = 16;  // fraction digits a bounded number may have
constexpr double kMaxBound = 1e15;

// v * 10^16 rounded up (or down) from the shortest decimal that reads back as v: every decimal at or
// above that one reads back as a double at or above v (rounding is monotone), so a bound compared
// this way holds both for the exact decimal and for the double a validator reads.
i128 scaled(double v, bool up) {
  const std::string s = fmt::format("{}", v);
  bool neg = false, after = false;
  std::string digits;
  int frac_len = 0, e = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '-') {
      neg = true;
    } else if (c == '.') {
      after = true;
    } else if (c == 'e' || c == 'E') {
      e = std::stoi(s.substr(i + 1));
      break;
    } else {
      digits += c;
      if (after) ++frac_len;
    }
  }
  const int q = e - frac_len + kFrac;
  i128 n = 0;
  bool rem = false;
  if (q >= 0) {
    for (const char c : digits) n = n * 10 + (c - '0');
    n *= pow10(q);
  } else {
    const size_t cut = static_cast<size_t>(-q);
    const size_t keep = digits.size() > cut ? digits.size() - cut : 0;
    for (size_t k = 0; k < keep; ++k) n = n * 10 + (digits[k] - '0');
    for (size_t k = keep; k < digits.size(); ++k) rem = rem || digits[k] != '0';
  }
  if (rem && up != neg) n += 1;
  return neg ? -n : n;
}

struct Dec {
  int64_t whole;
  std::string frac;  // no trailing zeros; empty when the value is whole
};
Dec parts(i128 v) {  // v >= 0
  const i128 s = pow10(kFrac);
  std::string f = fmt::format("{:0>16}", static_cast<uint64_t>(v % s));
  while (!f.empty() && f.back() == '0') f.pop_back();
  return {static_cast<int64_t>(v / s), f};
}

std::string cat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}
std::string lit(char d) { return fmt::format("\"{}\"", d); }
std::string any0(int k) { return k > 0 ? fmt::format("[0-9]{{0,{}}}", k) : ""; }
std::string zeros0(int k) { return k > 0 ? fmt::format("\"0\"{{0,{}}}", k) : ""; }
std::string opt(const std::string& x) { return x.empty() ? "" : "(" + x + ")?"; }

// Fraction digit strings D (1 to k digits) with 0.D >= 0.f, <= 0.f, or within [0.a, 0.b].
std::string frac_ge(const std::string& f, int k) {
  if (f.empty()) return fmt::format("[0-9]{{1,{}}}", k);
  const char d = f[0];
  const std::string rest = f.substr(1);
  if (rest.empty()) return cat(digits(d, '9'), any0(k - 1));
  std::vector<std::string> alts;
  if (d < '9') alts.push_back(cat(digits(static_cast<char>(d + 1), '9'), any0(k - 1)));
  alts.push_back(cat(lit(d), frac_ge(rest, k - 1)));
  return join(alts);
}
std::string frac_le(const std::string& f, int k) {
  if (f.empty()) return fmt::format("\"0\"{{1,{}}}", k);
  const char d = f[0];
  const std::string rest = f.substr(1);
  std::vector<std::string> alts;
  if (d > '0') alts.push_back(cat(digits('0', static_cast<char>(d - 1)), any0(k - 1)));
  alts.push_back(cat(lit(d), rest.empty() ? zeros0(k - 1) : opt(frac_le(rest, k - 1))));
  return join(alts);
}
std::string frac_between(const std::string& a, const std::string& b, int k) {
  if (a.empty()) return frac_le(b, k);
  const char x = a[0], y = b[0];
  const std::string ra = a.substr(1), rb = b.substr(1);
  if (x == y) {
    if (ra.empty()) return cat(lit(x), rb.empty() ? zeros0(k - 1) : opt(frac_le(rb, k - 1)));
    return cat(lit(x), frac_between(ra, rb, k - 1));
  }
  std::vector<std::string> alts;
  alts.push_back(cat(lit(x), ra.empty() ? any0(k - 1) : frac_ge(ra, k - 1)));
  if (x + 1 <= y - 1)
    alts.push_back(cat(digits(static_cast<char>(x + 1), static_cast<char>(y - 1)), any0(k - 1)));
  alts.push_back(cat(lit(y), rb.empty() ? zeros0(k - 1) : opt(frac_le(rb, k - 1))));
  return join(alts);
}

// Decimals y >= 0 (no exponent) with a <= y, and y <= b when b is given (a <= b).
std::string nonneg_decimal(i128 a, const std::optional<i128>& b) {
  const std::string any_frac = fmt::format("(\".\" [0-9]{{1,{}}})?", kFrac);
  const Dec lo = parts(a);
  auto low_end = [&]() {  // whole part lo.whole, fraction >= lo.frac
    const std::string w = fmt::format("\"{}\"", lo.whole);
    return lo.frac.empty() ? cat(w, any_frac) : cat(w, "\".\" " + frac_ge(lo.frac, kFrac));
  };
  std::vector<std::string> alts;
  if (!b) {
    alts.push_back(low_end());
    if (lo.whole < kMax) alts.push_back(cat(nonneg_range(lo.whole + 1, kMax), any_frac));
    return join(alts);
  }
  const Dec hi = parts(*b);
  const std::string wh = fmt::format("\"{}\"", hi.whole);
  if (lo.whole == hi.whole) {
    if (lo.frac.empty())
      return cat(wh, hi.frac.empty() ? fmt::format("(\".\" \"0\"{{1,{}}})?", kFrac)
                                     : "(\".\" " + frac_le(hi.frac, kFrac) + ")?");
    return cat(wh, "\".\" " + frac_between(lo.frac, hi.frac, kFrac));
  }
  alts.push_back(low_end());
  if (lo.whole + 1 <= hi.whole - 1) alts.push_back(cat(nonneg_range(lo.whole + 1, hi.whole - 1), any_frac));
  alts.push_back(cat(wh, "(\".\" " + frac_le(hi.frac, kFrac) + ")?"));
  return join(alts);
}

}  // namespace

void NumberBounds::set(const std::string& key, double v) {
  if (key == "minimum") minimum = v;
  if (key == "maximum") maximum = v;
  if (key == "exclusiveMinimum") exclusive_minimum = v;
  if (key == "exclusiveMaximum") exclusive_maximum = v;
}

Result<std::string> integer_range_gbnf(const NumberBounds& b, const RuleSink& rule) {
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
  const auto l = static_cast<int64_t>(lo), h = static_cast<int64_t>(hi);
  if (b.multiple_of <= 1) return int_range(l, h);
  // Multiples: |x| is a multiple exactly when x is, so the negative side is "-" and the same product.
  Multiples mult(b.multiple_of, rule);
  std::vector<std::string> alts;
  if (l < 0)
    if (auto e = mult.range(std::max<int64_t>(h < 0 ? -h : 1, 1), -l)) alts.push_back("\"-\" " + *e);
  if (h >= 0)
    if (auto e = mult.range(std::max<int64_t>(l, 0), h)) alts.push_back(*e);
  if (mult.overflow())
    return make_error(ErrorCode::Unsupported,
                      fmt::format("keyword 'multipleOf' ({}) with these minimum/maximum needs more than {} "
                                  "grammar rules (a smaller multipleOf or a narrower range fits)",
                                  b.multiple_of, Multiples::kMaxStates));
  if (alts.empty())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("no multiple of {} lies within minimum/maximum", b.multiple_of));
  return join(alts);
}

Result<std::string> number_range_gbnf(const NumberBounds& b) {
  std::optional<i128> lo, hi;
  auto bound = [&](const std::optional<double>& v, const char* name, bool lower, bool exclusive) -> Status {
    if (!v) return {};
    if (!std::isfinite(*v) || std::fabs(*v) > kMaxBound)
      return make_error(
          ErrorCode::Unsupported,
          fmt::format("keyword '{}' = {} on a number: only bounds within ±1e15 are supported", name, *v));
    // An exclusive bound is the inclusive bound at the next double past it: a text reading back as
    // that double or beyond reads back as beyond the bound.
    const double x = exclusive ? std::nextafter(*v, lower ? HUGE_VAL : -HUGE_VAL) : *v;
    const i128 s = scaled(x, lower);
    if (lower)
      lo = lo ? std::max(*lo, s) : s;
    else
      hi = hi ? std::min(*hi, s) : s;
    return {};
  };
  for (const Status& st :
       {bound(b.minimum, "minimum", true, false), bound(b.maximum, "maximum", false, false),
        bound(b.exclusive_minimum, "exclusiveMinimum", true, true),
        bound(b.exclusive_maximum, "exclusiveMaximum", false, true)})
    if (!st) return st.error();
  if (lo && hi && *lo > *hi)
    return make_error(ErrorCode::InvalidArgument, "no number lies within minimum/maximum");
  std::vector<std::string> alts;
  // x >= 0: x in [max(lo, 0), hi].
  if (!hi || *hi >= 0) alts.push_back(nonneg_decimal(lo && *lo > 0 ? *lo : 0, hi));
  // x <= 0 as "-" y: y in [max(-hi, 0), -lo] ("-0" is 0, inside the range when 0 is).
  if (!lo || *lo < 0) {
    const i128 from = hi && *hi < 0 ? -*hi : 0;
    std::optional<i128> to;
    if (lo) to = -*lo;
    alts.push_back("\"-\" " + nonneg_decimal(from, to));
  }
  return join(alts);
}

}  // namespace glass::grammar

// ---- the converter's numbers ----------------------------------------------------------------------

namespace glass::grammar::schema_detail {

Result<std::string> Converter::number_schema(const json& s, const std::string& path, bool integer) {
  NumberBounds b;
  // Draft 4's boolean exclusiveMinimum / exclusiveMaximum turn minimum / maximum exclusive; only
  // under a draft-4 (or 3) $schema, since later drafts read the keywords as numbers.
  const bool draft4 = root_.is_object() && root_.contains("$schema") && root_["$schema"].is_string() &&
                      (root_["$schema"].get<std::string>().find("draft-04") != std::string::npos ||
                       root_["$schema"].get<std::string>().find("draft-03") != std::string::npos);
  for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    const json& v = s[k];
    const std::string key = k;
    if (v.is_boolean() && draft4 && (key == "exclusiveMinimum" || key == "exclusiveMaximum")) continue;
    if (!v.is_number()) return fail(path + "/" + k, fmt::format("{} must be a number", k));
    const bool low = key == "minimum", high = key == "maximum";
    const bool excl = (low && draft4 && s.value("exclusiveMinimum", json(false)) == true) ||
                      (high && draft4 && s.value("exclusiveMaximum", json(false)) == true);
    b.set(excl ? (low ? "exclusiveMinimum" : "exclusiveMaximum") : key, v.get<double>());
  }
  if (s.contains("multipleOf")) {
    const json& m = s["multipleOf"];
    if (!m.is_number() || m.get<double>() <= 0)
      return fail(path + "/multipleOf", "multipleOf must be a number above 0");
    if (!m.is_number_unsigned() && !m.is_number_integer())
      return fail(path + "/multipleOf",
                  "keyword 'multipleOf' with a fractional value is not supported (only whole multipleOf)");
    if (m.get<uint64_t>() > 1000000)
      return fail(path + "/multipleOf", "keyword 'multipleOf' above 1000000 is not supported");
    b.multiple_of = m.get<uint64_t>();
    integer = true;  // a whole multipleOf admits whole numbers only (written as integers)
  }
  if (!b.any()) return use(integer ? "integer" : "number");
  const std::string where = b.multiple_of > 1 ? path + "/multipleOf" : path;
  auto body = integer ? integer_range_gbnf(
                            b, [this](const std::string& h, const std::string& x) { return rule(h, x); })
                      : number_range_gbnf(b);
  if (!body) return fail(where, body.error().message);
  return rule(integer ? (b.multiple_of > 1 ? "int-mult" : "int-range") : "num-range", *body);
}

}  // namespace glass::grammar::schema_detail
