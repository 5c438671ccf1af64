#pragma once
// The grammar engine's compiled form: a context-free grammar over bytes. Every rule is a list of
// alternatives, each a run of elements in one flat array ending in End; an element matches one
// byte from a set or calls a rule. Character classes over code points were already lowered into
// UTF-8 byte sequences (utf8_ranges.h), so the matcher never decodes UTF-8 and a token's bytes
// (possibly half a character) are matched as they are.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace glass::grammar {

// 256 bits: the bytes one element accepts.
struct ByteSet {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool empty() const { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
};

enum class ElemKind : uint8_t { Byte, Rule, End };

struct Elem {
  ElemKind kind = ElemKind::End;
  uint32_t value = 0;  // Byte: index into Grammar::sets; Rule: rule id
};

struct Rule {
  std::string name;            // as written, or a generated helper's name ("value_3")
  std::vector<uint32_t> alts;  // start index of each alternative in Grammar::elems
  bool helper = false;         // made by lowering (a group, repetition or character class), not written
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<Elem> elems;
  std::vector<ByteSet> sets;
  uint32_t root = 0;
  uint32_t start = 0;  // element position of `root End`: matching starts by calling the root
};

// Bounds that keep compiling and matching a hostile grammar finite: past them compiling fails
// with a clear error instead of growing without limit.
inline constexpr size_t kMaxElems = size_t{1} << 20;  // elements after lowering repetitions
inline constexpr uint32_t kMaxRepeat = 100000;        // m and n in x{m,n}
inline constexpr size_t kMaxNesting = 256;            // parentheses / brackets depth in GBNF
inline constexpr size_t kMaxStacks = 4096;            // live parse stacks of one matcher state
// Stack nodes one closure may expand. Rules that call nullable rules twice in a row (r0 ::= r1 r1,
// r1 ::= r2 r2, ..., rN ::= "") reach 2^N distinct stacks through empty matches alone, none of
// them a live top, so kMaxStacks alone does not bound the work; 16 per live stack does.
inline constexpr size_t kMaxClosure = 16 * kMaxStacks;

}  // namespace glass::grammar
