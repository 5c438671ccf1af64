#pragma once
#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

// Qwen 3.5 (dense): Gated DeltaNet and gated attention layers (qwen35.cpp).
Result<ModelGraph> qwen35_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);
// Qwen 3.5 MoE: the same layers with a mixture of experts and a shared expert as the FFN.
Result<ModelGraph> qwen35moe_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                       const BuildOptions& opt);

}  // namespace glass::models
