#pragma once
// Sets of operand dtypes, as the backends' kernel tables name what an entry accepts ("matmul(f32,
// {q4_0|q8_0|...})"). One place lists the weight types, so a new one is added to every table at once.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "graph/dtype.h"

namespace glass::backend {

using DTypeSet = uint32_t;
constexpr DTypeSet bit(graph::DType t) { return 1u << static_cast<unsigned>(t); }
constexpr DTypeSet kF32 = bit(graph::DType::F32);
constexpr DTypeSet kI32 = bit(graph::DType::I32);
constexpr DTypeSet kHalf = bit(graph::DType::F16) | bit(graph::DType::BF16);
constexpr DTypeSet kQuant = bit(graph::DType::Q4_0) | bit(graph::DType::Q4_1) | bit(graph::DType::Q5_0) |
                            bit(graph::DType::Q5_1) | bit(graph::DType::Q8_0) | bit(graph::DType::Q2_K) |
                            bit(graph::DType::Q3_K) | bit(graph::DType::Q4_K) | bit(graph::DType::Q5_K) |
                            bit(graph::DType::Q6_K) | bit(graph::DType::Q8_A) | bit(graph::DType::MXFP4) |
                            bit(graph::DType::IQ4_NL) | bit(graph::DType::IQ4_XS);
constexpr DTypeSet kWeights = kF32 | kHalf | kQuant;
constexpr DTypeSet kKv = kF32 | bit(graph::DType::F16);
constexpr DTypeSet kPlain = kF32 | kHalf | kI32;

// "f32", or "{f32|f16}" for a set of several.
inline std::string dtype_set_name(DTypeSet s) {
  std::vector<std::string> names;
  for (int t = 0; t < static_cast<int>(graph::DType::kSentinel); ++t)
    if (s & bit(static_cast<graph::DType>(t)))
      names.emplace_back(graph::dtype_name(static_cast<graph::DType>(t)));
  return names.size() == 1 ? names[0] : fmt::format("{{{}}}", fmt::join(names, "|"));
}

}  // namespace glass::backend
