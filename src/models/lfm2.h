#pragma once
#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

// LFM2: gated short convolutions and attention layers (lfm2.cpp).
Result<ModelGraph> lfm2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                  const BuildOptions& opt);

}  // namespace glass::models
