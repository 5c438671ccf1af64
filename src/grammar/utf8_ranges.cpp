#include "grammar/utf8_ranges.h"

#include <algorithm>

namespace glass::grammar {
namespace {

constexpr uint32_t kMaxCp = 0x10FFFF;

int utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t* out) {
  const int n = utf8_len(cp);
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
}

// [lo, hi] within one encoded length: split where a continuation byte's range would not span
// its full 0x80..0xBF, then emit each piece as per-byte ranges.
void split(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  const int n = utf8_len(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split(lo, lo | m, out);
        split((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        split(lo, (hi & ~m) - 1, out);
        split(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  Utf8Sequence seq;
  for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

}  // namespace

CodeRanges normalize_ranges(CodeRanges r) {
  for (auto& [lo, hi] : r) {
    if (lo > hi) std::swap(lo, hi);
    hi = std::min(hi, kMaxCp);
  }
  std::erase_if(r, [](const auto& x) { return x.first > kMaxCp; });
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

CodeRanges complement_ranges(const CodeRanges& r) {
  CodeRanges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : r) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCp) out.push_back({next, kMaxCp});
  return out;
}

std::vector<Utf8Sequence> utf8_sequences(const CodeRanges& ranges) {
  // Cut at the encoded-length boundaries and around the surrogates first.
  static constexpr std::pair<uint32_t, uint32_t> kBands[] = {
      {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, kMaxCp}};
  std::vector<Utf8Sequence> out;
  for (const auto& [lo, hi] : ranges)
    for (const auto& [blo, bhi] : kBands) {
      const uint32_t a = std::max(lo, blo), b = std::min(hi, bhi);
      if (a <= b) split(a, b, out);
    }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  uint8_t b[4];
  encode(cp, b);
  out.append(reinterpret_cast<const char*>(b), static_cast<size_t>(utf8_len(cp)));
}

}  // namespace glass::grammar
