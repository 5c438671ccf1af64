#pragma once
#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

// Qwen 3.5 (dense): Gated DeltaNet and gated attention layers (qwen35.cpp).
Result<ModelGraph> qwen35_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);

}  // namespace glass::models
