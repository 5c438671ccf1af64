#pragma once
// MLX affine-quantized checkpoints (mlx-community snapshots) as glass weights. A quantized module
// NAME stores NAME.weight as U32 [rows, cols * bits / 32] (32 / bits values per word, the first in
// the lowest bits), and NAME.scales, NAME.biases [rows, cols / group_size] in the model's float
// dtype; each weight is scales * q + biases of its group (MLX's affine mode). Built once at load into
// memory the model owns (every other tensor stays in the mapping):
//  * 4-bit weights become Q4_1, one block of 32 per half, quarter or whole group with d = scale and
//    m = bias: the same numbers, so the cpu kernels and the ref path compute the checkpoint's values;
//  * 8-bit weights (and 4-bit ones with a scale or bias f16 would round, so not Q4_1's) become
//    Q8_A (formats/quant_blocks.h): f32 d = scale, m = bias + 128 * scale, q = u - 128, again the
//    checkpoint's values (10 bits a weight in memory against MLX's 8.5).
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "glass/result.h"
#include "models/hf.h"

namespace glass::models {

using SafetensorsTensors = std::map<std::string, const formats::SafetensorsTensor*, std::less<>>;

// `tensors` with each quantized triplet replaced by one NAME.weight (made in `owned`). A triplet's
// bits and group size are the config's (its per-module entry, else the default): 4 or 8 bits, groups
// of 32, 64 or 128, and its shapes must agree with them. Errors name the tensor: a weight without its scales
// or biases (or the reverse), shapes that do not agree, scales or biases past f16's range.
// `read_once(t)` is called for each triplet tensor once its converted copy is made (nothing reads it
// again: the caller may drop its pages).
Result<SafetensorsTensors> mlx_to_glass(
    const SafetensorsTensors& tensors, const formats::MlxQuantization& q, HfOwnedTensors& owned,
    std::string_view where, const std::function<void(const formats::SafetensorsTensor&)>& read_once = {});

}  // namespace glass::models
