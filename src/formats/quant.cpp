#include "formats/quant.h"

#include <fmt/format.h>

#include <cstring>

#include "formats/quant_blocks.h"

namespace glass::formats {

Status dequantize_row(graph::DType type, const void* src, float* dst, int64_t n) {
  using graph::DType;
  if (type >= DType::kSentinel) return make_error(ErrorCode::Unsupported, "dequantize_row: invalid dtype");
  const auto& tr = graph::traits(type);
  if (n < 0 || n % tr.block_size != 0)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("dequantize_row: {}: n = {} is not a non-negative multiple of the block size {}", tr.name,
                    n, tr.block_size));
  const int64_t blocks = n / tr.block_size;
  const auto* bytes = static_cast<const uint8_t*>(src);
  switch (type) {
    case DType::F32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return {};
    case DType::F16:
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const auto h = static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8));
        dst[i] = type == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return {};
    case DType::Q4_0:
      quant::dequantize_q4_0(src, dst, blocks);
      return {};
    case DType::Q4_1:
      quant::dequantize_q4_1(src, dst, blocks);
      return {};
    case DType::Q5_0:
      quant::dequantize_q5_0(src, dst, blocks);
      return {};
    case DType::Q5_1:
      quant::dequantize_q5_1(src, dst, blocks);
      return {};
    case DType::Q8_0:
      quant::dequantize_q8_0(src, dst, blocks);
      return {};
    case DType::Q2_K:
      quant::dequantize_q2_k(src, dst, blocks);
      return {};
    case DType::Q3_K:
      quant::dequantize_q3_k(src, dst, blocks);
      return {};
    case DType::Q4_K:
      quant::dequantize_q4_k(src, dst, blocks);
      return {};
    case DType::Q5_K:
      quant::dequantize_q5_k(src, dst, blocks);
      return {};
    case DType::Q6_K:
      quant::dequantize_q6_k(src, dst, blocks);
      return {};
    case DType::Q8_A:
      quant::dequantize_q8_a(src, dst, blocks);
      return {};
    case DType::MXFP4:
      quant::dequantize_mxfp4(src, dst, blocks);
      return {};
    case DType::IQ4_NL:
      quant::dequantize_iq4_nl(src, dst, blocks);
      return {};
    case DType::IQ4_XS:
      quant::dequantize_iq4_xs(src, dst, blocks);
      return {};
    case DType::I32:
    case DType::I8:
    case DType::kSentinel:
      break;
  }
  return make_error(ErrorCode::Unsupported, fmt::format("dequantize_row: no dequantization for {}", tr.name));
}

}  // namespace glass::formats
