#include "formats/quant_check.h"

#include <cstring>
#include <vector>

namespace glass::formats {
namespace {

using graph::DType;

struct Field {
  size_t offset;
  const char* name;
};

// The f16 scale fields of one block of each type (formats/quant_blocks.h).
std::vector<Field> f16_fields(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::Q3_K:
    case DType::Q6_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
      return {{t == DType::Q3_K ? 108u : t == DType::Q6_K ? 208u : 0u, "d"}};
    case DType::Q4_1:
    case DType::Q5_1:
      return {{0, "d"}, {2, "m"}};
    case DType::Q4_K:
    case DType::Q5_K:
      return {{0, "d"}, {2, "dmin"}};
    case DType::Q2_K:
      return {{80, "d"}, {82, "dmin"}};
    default:
      return {};
  }
}

}  // namespace

std::optional<BadBlock> find_bad_block(graph::DType type, const void* data, int64_t n) {
  const auto& tr = graph::traits(type);
  if (!tr.quantized || n <= 0) return std::nullopt;
  const auto* bytes = static_cast<const uint8_t*>(data);
  const int64_t blocks = n / tr.block_size;
  const auto stride = static_cast<size_t>(tr.block_bytes);
  if (type == DType::MXFP4) {
    for (int64_t b = 0; b < blocks; ++b)
      if (bytes[static_cast<size_t>(b) * stride] == 0xFF) return BadBlock{b, "e", "0xff"};
    return std::nullopt;
  }
  const std::vector<Field> fields = f16_fields(type);
  for (int64_t b = 0; b < blocks; ++b)
    for (const Field& f : fields) {
      const uint8_t* p = bytes + static_cast<size_t>(b) * stride + f.offset;
      const auto h = static_cast<uint16_t>(p[0] | (p[1] << 8));
      if ((h & 0x7C00) != 0x7C00) continue;  // exponent all ones: infinite or NaN
      const char* value = (h & 0x03FF) != 0 ? "nan" : (h & 0x8000) != 0 ? "-inf" : "inf";
      return BadBlock{b, f.name, value};
    }
  return std::nullopt;
}

}  // namespace glass::formats
