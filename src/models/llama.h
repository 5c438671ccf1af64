#pragma once
#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

// Llama reads exactly the decoder configuration every family shares (hparams.h).
using LlamaConfig = DecoderConfig;

Result<LlamaConfig> llama_config_from_gguf(const formats::GgufFile& file, const WeightIndex& weights);
Result<graph::Graph> build_llama(const LlamaConfig& c, const WeightIndex& weights, const BuildOptions& opt);
Result<ModelGraph> llama_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt);

}  // namespace glass::models
