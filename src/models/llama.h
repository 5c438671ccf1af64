#pragma once
#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

// Llama reads exactly the decoder configuration every family shares (hparams.h).
using LlamaConfig = DecoderConfig;

// What the families that are Llama's graph change in it.
struct LlamaVariant {
  const char* arch = "llama";  // the GGUF key prefix
  // Every no_rope_period-th layer (layers p-1, 2p-1, ...) attends without position encoding
  // (SmolLM3's NoPE layers); 0: every layer rotates.
  int64_t no_rope_period = 0;
};

Result<LlamaConfig> llama_config_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                           const char* arch = "llama");
Result<graph::Graph> build_llama(const LlamaConfig& c, const WeightIndex& weights, const BuildOptions& opt,
                                 const LlamaVariant& variant = {});
Result<ModelGraph> llama_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt);
// SmolLM3 (HF model_type "smollm3"): Llama with no RoPE in every fourth layer; llama.cpp fixes the
// period at 4 and the file has no key for it (smollm3.cpp).
Result<ModelGraph> smollm3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                     const BuildOptions& opt);

}  // namespace glass::models
