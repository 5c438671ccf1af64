#pragma once
// Numeric bounds as exact GBNF: integers in [lo, hi] as digit-range alternatives (each bound
// split by digit count, then by leading digits, as regex range generators do), and decimals
// without exponent whose bounds are whole numbers. Bounds a grammar cannot express exactly
// (fractional bounds on numbers, exclusive bounds on numbers) are errors naming them.
#include <optional>
#include <string>

#include "glass/result.h"

namespace glass::grammar {

struct NumberBounds {
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  void set(const std::string& key, double v);
  bool any() const { return minimum || maximum || exclusive_minimum || exclusive_maximum; }
};

Result<std::string> integer_range_gbnf(const NumberBounds& b);
Result<std::string> number_range_gbnf(const NumberBounds& b);

}  // namespace glass::grammar
