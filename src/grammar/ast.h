#pragma once
// GBNF as parsed, before lowering (lower.h): one expression tree per rule.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "grammar/utf8_ranges.h"

namespace glass::grammar {

inline constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

struct Expr {
  enum Kind : uint8_t { Alt, Seq, Literal, Class, Ref, Repeat } kind = Seq;
  std::vector<Expr> items;    // Alt: alternatives; Seq: elements; Repeat: the one repeated item
  std::string bytes;          // Literal: UTF-8
  CodeRanges ranges;          // Class: the code points matched (negation already applied)
  std::string name;           // Ref
  uint32_t min = 0, max = 0;  // Repeat; max = kUnbounded for * and +
  int line = 0, col = 0;      // where it was written, for errors
};

struct RuleDef {
  std::string name;
  Expr body;  // an Alt
  int line = 0, col = 0;
};

}  // namespace glass::grammar
