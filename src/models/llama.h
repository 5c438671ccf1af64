#pragma once
#include "models/architecture.h"

namespace glass::models {

struct LlamaConfig {
  int64_t n_layers = 0;
  int64_t dim = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_dim = 0;
  int64_t vocab_size = 0;
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-5f;
  int64_t n_rot = 0;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;

  Status validate() const;
};

Result<LlamaConfig> llama_config_from_gguf(const formats::GgufFile& file, const WeightIndex& weights);
Result<graph::Graph> build_llama(const LlamaConfig& c, const WeightIndex& weights, const BuildOptions& opt);
Result<ModelGraph> llama_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt);

}  // namespace glass::models
