#include "graph/dtype.h"

#include <array>
#include <limits>

namespace glass::graph {
namespace {

constexpr std::array<DTypeTraits, static_cast<size_t>(DType::kSentinel)> kTraits = {{
    {DType::F32, "f32", 1, 4, false},
    {DType::F16, "f16", 1, 2, false},
    {DType::BF16, "bf16", 1, 2, false},
    {DType::I32, "i32", 1, 4, false},
    {DType::I8, "i8", 1, 1, false},
    {DType::Q4_0, "q4_0", 32, 18, true},
    {DType::Q4_1, "q4_1", 32, 20, true},
    {DType::Q5_0, "q5_0", 32, 22, true},
    {DType::Q5_1, "q5_1", 32, 24, true},
    {DType::Q8_0, "q8_0", 32, 34, true},
    {DType::Q2_K, "q2_k", 256, 84, true},
    {DType::Q3_K, "q3_k", 256, 110, true},
    {DType::Q4_K, "q4_k", 256, 144, true},
    {DType::Q5_K, "q5_k", 256, 176, true},
    {DType::Q6_K, "q6_k", 256, 210, true},
    {DType::Q8_A, "q8_a", 32, 40, true},
    {DType::MXFP4, "mxfp4", 32, 17, true},
    {DType::IQ4_NL, "iq4_nl", 32, 18, true},
    {DType::IQ4_XS, "iq4_xs", 256, 136, true},
}};

constexpr bool table_in_enum_order() {
  for (size_t i = 0; i < kTraits.size(); ++i)
    if (static_cast<size_t>(kTraits[i].dtype) != i) return false;
  return true;
}
static_assert(table_in_enum_order(), "kTraits rows must follow DType order");

}  // namespace

const DTypeTraits& traits(DType t) { return kTraits.at(static_cast<size_t>(t)); }
std::string_view dtype_name(DType t) { return traits(t).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& row : kTraits)
    if (row.name == name) return row.dtype;
  return std::nullopt;
}

std::optional<uint64_t> dtype_bytes(DType t, uint64_t n) {
  const auto& tr = traits(t);
  const auto bs = static_cast<uint64_t>(tr.block_size);
  if (n % bs != 0) return std::nullopt;
  const uint64_t blocks = n / bs;
  const auto bb = static_cast<uint64_t>(tr.block_bytes);
  if (blocks > std::numeric_limits<uint64_t>::max() / bb) return std::nullopt;
  return blocks * bb;
}

}  // namespace glass::graph
