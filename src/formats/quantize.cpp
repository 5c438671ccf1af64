#include "formats/quantize.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "formats/half.h"
#include "formats/quant_blocks.h"

namespace glass::formats {

float quantize_limit(graph::DType type) {
  using graph::DType;
  if (type == DType::F32) return std::numeric_limits<float>::max();
  // The largest f32 that bf16 rounding keeps finite (one more rounds up to infinity).
  if (type == DType::BF16) return std::bit_cast<float>(0x7f7f7fffu);
  return 65504.0f;
}

Status quantize_row(graph::DType type, const float* src, void* dst, int64_t n) {
  using graph::DType;
  if (type >= DType::kSentinel) return make_error(ErrorCode::Unsupported, "quantize_row: invalid dtype");
  const auto& tr = graph::traits(type);
  if (n < 0 || n % tr.block_size != 0)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("quantize_row: {}: n = {} is not a non-negative multiple of the block size {}", tr.name,
                    n, tr.block_size));
  if (type == DType::I32 || type == DType::I8)
    return make_error(ErrorCode::Unsupported, fmt::format("quantize_row: no quantization to {}", tr.name));
  // Block quantizers compute with the values (squares, ranges), so a non-finite or out-of-range
  // value would give non-finite scales, i.e. a silently broken block.
  const float limit = quantize_limit(type);
  for (int64_t i = 0; i < n; ++i) {
    if (!(std::fabs(src[i]) <= limit))
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("quantize_row: {}: value {} at index {} is {}", tr.name, src[i], i,
                                    std::isfinite(src[i]) ? fmt::format("beyond the type's range ±{}", limit)
                                                          : std::string("not finite")));
  }
  const int64_t blocks = n / tr.block_size;
  auto* bytes = static_cast<uint8_t*>(dst);
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return {};
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = type == DType::F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        bytes[2 * i] = static_cast<uint8_t>(h & 0xff);
        bytes[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      }
      return {};
    case DType::Q4_0:
      quant::quantize_q4_0(src, dst, blocks);
      return {};
    case DType::Q4_1:
      quant::quantize_q4_1(src, dst, blocks);
      return {};
    case DType::Q5_0:
      quant::quantize_q5_0(src, dst, blocks);
      return {};
    case DType::Q5_1:
      quant::quantize_q5_1(src, dst, blocks);
      return {};
    case DType::Q8_0:
      quant::quantize_q8_0(src, dst, blocks);
      return {};
    case DType::Q2_K:
      quant::quantize_q2_k(src, dst, blocks);
      return {};
    case DType::Q3_K:
      quant::quantize_q3_k(src, dst, blocks);
      return {};
    case DType::Q4_K:
      quant::quantize_q4_k(src, dst, blocks);
      return {};
    case DType::Q5_K:
      quant::quantize_q5_k(src, dst, blocks);
      return {};
    case DType::Q6_K:
      quant::quantize_q6_k(src, dst, blocks);
      return {};
    case DType::Q8_A:
      quant::quantize_q8_a(src, dst, blocks);
      return {};
    case DType::IQ4_NL:
      quant::quantize_iq4_nl(src, dst, blocks);
      return {};
    case DType::IQ4_XS:
      quant::quantize_iq4_xs(src, dst, blocks);
      return {};
    case DType::MXFP4:
      quant::quantize_mxfp4(src, dst, blocks);
      return {};
    case DType::I32:
    case DType::I8:
    case DType::kSentinel:
      break;
  }
  return make_error(ErrorCode::Unsupported, fmt::format("quantize_row: no quantization to {}", tr.name));
}

}  // namespace glass::formats
