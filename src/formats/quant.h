#pragma once
// Dequantization of GGUF/ggml weight storage to f32. Used at load time and by reference paths; the
// results are bit-exact with ggml's dequantize_row_* so an oracle built on llama.cpp agrees to the
// last bit. Block layouts are documented in quant_blocks.h.
#include <cstdint>

#include "formats/half.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

// Writes `n` floats to `dst` from `src`, which holds n elements of `type` (n / block_size blocks,
// no alignment needed). Supports F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K..Q6_K, Q8_A, MXFP4,
// IQ4_NL, IQ4_XS. Errors:
// InvalidArgument when n is negative or not a multiple of the block size, Unsupported for other
// types; dst is untouched on error.
Status dequantize_row(graph::DType type, const void* src, float* dst, int64_t n);

}  // namespace glass::formats
