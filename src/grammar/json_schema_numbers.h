#pragma once
// Numeric bounds as exact GBNF: integers in [lo, hi] as digit-range alternatives (each bound
// split by digit count, then by leading digits, as regex range generators do), optionally only the
// multiples of an integer `multipleOf` (the range's digit automaton times a remainder automaton:
// one rule per remaining digit count and remainder), and decimals without exponent (at most 16
// digits before and after the point) within any minimum / maximum / exclusiveMinimum /
// exclusiveMaximum. Bounds are compared as validators compare them: a text is emitted only when its
// exact decimal value and its value as the nearest double both satisfy every bound.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "glass/result.h"

namespace glass::grammar {

struct NumberBounds {
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  uint64_t multiple_of = 1;  // an integer >= 1; 1 means no multipleOf
  void set(const std::string& key, double v);
  bool any() const { return minimum || maximum || exclusive_minimum || exclusive_maximum || multiple_of > 1; }
};

// Makes a named rule of a GBNF body and returns its name (the converter's rule table).
using RuleSink = std::function<std::string(const std::string& hint, const std::string& body)>;

Result<std::string> integer_range_gbnf(const NumberBounds& b, const RuleSink& rule);
Result<std::string> number_range_gbnf(const NumberBounds& b);

}  // namespace glass::grammar
