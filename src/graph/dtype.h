#pragma once
// Element types of graph tensors: plain numeric types and the quantized block storage types that
// GGUF files carry. A quantized type stores `block_size` elements in `block_bytes` bytes.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace glass::graph {

enum class DType : uint8_t {
  F32,
  F16,
  BF16,
  I32,
  I8,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  // Affine 8-bit (MLX's 8-bit weights, converted at load): glass's own, no GGUF id.
  Q8_A,
  // OCP Microscaling FP4 (gpt-oss's experts): 32 E2M1 values sharing one E8M0 (power of two) scale.
  MXFP4,
  // llama.cpp's non-linear 4-bit types: a 16-value grid denser near zero; IQ4_XS adds 6-bit
  // sub-block scales to 256-weight super-blocks.
  IQ4_NL,
  IQ4_XS,
  kSentinel,
};

struct DTypeTraits {
  DType dtype;
  std::string_view name;  // lower case, as printed and serialized
  int64_t block_size;     // elements per block (1 for plain types)
  int64_t block_bytes;    // bytes per block
  bool quantized;
};

const DTypeTraits& traits(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes needed for `n` elements, or nullopt when n is not a multiple of the block size or the
// product overflows.
std::optional<uint64_t> dtype_bytes(DType t, uint64_t n);

}  // namespace glass::graph
