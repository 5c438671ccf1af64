#pragma once
// Code-point ranges as UTF-8 byte-range sequences (the construction of Rust regex-syntax's
// Utf8Sequences): [lo, hi] is split until every piece is a product of per-byte ranges, so a
// character class becomes alternatives of 1 to 4 byte sets and the matcher works on bytes only.
// Surrogates (U+D800..U+DFFF) are never produced: they are not valid UTF-8.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace glass::grammar {

struct ByteRange {
  uint8_t lo, hi;
};
using Utf8Sequence = std::vector<ByteRange>;  // 1 to 4 ranges, one per byte

// Sorted, merged code-point ranges (inclusive).
using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;

CodeRanges normalize_ranges(CodeRanges r);          // sorts, merges, clips to [0, 0x10FFFF]
CodeRanges complement_ranges(const CodeRanges& r);  // over [0, 0x10FFFF] minus surrogates
std::vector<Utf8Sequence> utf8_sequences(const CodeRanges& r);
// Appends the UTF-8 encoding of cp (cp <= 0x10FFFF).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace glass::grammar
