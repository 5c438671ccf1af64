#pragma once
// gpt-oss (GGUF general.architecture "gpt-oss"): gptoss.cpp.
#include "models/architecture.h"

namespace glass::models {

Result<ModelGraph> gptoss_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);

}  // namespace glass::models
