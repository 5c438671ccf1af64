#pragma once
// MLX affine-quantized checkpoints (mlx-community snapshots) as glass weights. A quantized module
// NAME stores NAME.weight as U32 [rows, cols * bits / 32] (32 / bits values per word, the first in
// the lowest bits), and NAME.scales, NAME.biases [rows, cols / group_size] in the model's float
// dtype; each weight is scales * q + biases of its group (MLX's affine mode). A 4-bit weight becomes
// a Q4_1 tensor at load, one block of 32 per half, quarter or whole group (d = scale, m = bias: the
// same numbers, so the cpu kernels and the ref path's dequantization compute the checkpoint's
// values), built once into memory the model owns; every other tensor stays in the mapping.
#include <map>
#include <string>
#include <string_view>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "glass/result.h"
#include "models/hf.h"

namespace glass::models {

using SafetensorsTensors = std::map<std::string, const formats::SafetensorsTensor*, std::less<>>;

// `tensors` with each quantized triplet replaced by one Q4_1 NAME.weight (made in `owned`). A
// triplet's bits and group size come from its shapes (per-module overrides in the config agree or
// the shapes win): they must give q.group_size's 4 bits and a group of 32, 64 or 128 dividing the
// row. Errors name the tensor: a weight without its scales or biases (or the reverse), shapes that
// do not agree, scales or biases past f16's range.
Result<SafetensorsTensors> mlx_to_q4_1(const SafetensorsTensors& tensors, const formats::MlxQuantization& q,
                                       HfOwnedTensors& owned, std::string_view where);

}  // namespace glass::models
