#pragma once
// Quantization of f32 rows to GGUF/ggml weight storage: the inverse of dequantize_row (quant.h),
// writing the block layouts of quant_blocks.h. The algorithms are llama.cpp's reference
// quantizers without an importance matrix (what llama-quantize runs by default), so a file
// quantized by glass carries the same bytes as llama-quantize's for the same input.
#include <cstdint>

#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

// The largest magnitude a value may have to be quantized to `type`: f16's largest finite value
// (65504) for F16 and the block types (they store f16 scales and mins, and Q4_1/Q5_1 store the
// block's minimum itself), f32's for F32, and for BF16 the largest f32 that rounds to a finite bf16.
float quantize_limit(graph::DType type);

// Writes n elements of `type` to dst (graph::dtype_bytes(type, n) bytes, no alignment needed)
// from the floats at src. Supports F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, Q8_A,
// MXFP4, IQ4_NL, IQ4_XS.
// Errors: InvalidArgument when n is negative or not a multiple of the block size, or a value is
// not finite or beyond quantize_limit(type) (naming its index); Unsupported for other types. dst
// is untouched on error.
Status quantize_row(graph::DType type, const float* src, void* dst, int64_t n);

}  // namespace glass::formats
