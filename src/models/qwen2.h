#pragma once
#include "models/architecture.h"

namespace glass::models {

Result<ModelGraph> qwen2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt);

}  // namespace glass::models
