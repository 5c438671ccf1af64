#pragma once
// Block scales that no quantizer writes: an f16 scale, minimum or super-block d that is NaN or
// infinite, or MXFP4's E8M0 exponent 0xFF (its NaN). Such a block turns every product it enters
// into NaN, so a file holding one is refused at load, naming the tensor and the block, as
// llama.cpp's --check-tensors (ggml_validate_row_data) does for the same fields.
#include <cstdint>
#include <optional>
#include <string>

#include "graph/dtype.h"

namespace glass::formats {

struct BadBlock {
  int64_t block = 0;  // index of the block in the tensor
  std::string field;  // "d", "dmin", "m" or "e"
  std::string value;  // "nan", "inf", "-inf" or "0xff"
};

// The first block of the n elements of `type` at `data` (n a multiple of the block size) whose
// scale fields are not finite; nullopt for a clean tensor and for the types without scale fields.
std::optional<BadBlock> find_bad_block(graph::DType type, const void* data, int64_t n);

}  // namespace glass::formats
