#pragma once
// The configuration every pre-norm RoPE decoder here reads the same way (llama.cpp's
// llm_load_hparams reads these keys for every such architecture), through the one reader of
// "<arch>.<key>" metadata (hparam_reader.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "glass/result.h"
#include "models/architecture.h"
#include "models/hparam_reader.h"
#include "models/weights.h"

namespace glass::models {

// What every decoder family here shares: sizes, attention geometry, RoPE and the norm epsilon.
struct DecoderConfig {
  std::string arch;
  int64_t n_layers = 0;
  int64_t dim = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;  // attention.key_length, default dim / n_heads
  int64_t ffn_dim = 0;   // feed_forward_length (0 where the family does not read it)
  int64_t vocab_size = 0;
  int64_t n_ctx_train = 0;
  int64_t n_rot = 0;  // rope.dimension_count, default head_dim
  float rms_eps = 0.0f;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / rope.scaling.factor for linear scaling
};

// Reads block_count, embedding_length, attention.head_count(_kv), attention.key_length (and
// value_length, which must equal it), feed_forward_length (when `read_ffn`), context_length,
// attention.layer_norm_rms_epsilon, rope.dimension_count, rope.freq_base, rope.scaling.*, and the
// vocabulary size (vocab_size or the rows of token_embd.weight); then validates them. The first
// error names the key (InvalidFile), or is Unsupported for a value_length or RoPE scaling glass does
// not build.
// With `kv_heads_per_layer`, attention.head_count_kv may be an array with a value per layer (0:
// the layer has no attention, LFM2); it is returned there and n_kv_heads is the attention layers'
// count, which must be the same for all of them.
Result<DecoderConfig> read_decoder_config(HparamReader& hp, const WeightIndex& weights, bool read_ffn,
                                          std::vector<int64_t>* kv_heads_per_layer = nullptr);

// The ModelGraph of a finished graph: sizes, state kinds and the one-line summary.
ModelGraph decoder_model_graph(graph::Graph g, const DecoderConfig& c, const BuildOptions& opt,
                               const std::string& extra_summary);

}  // namespace glass::models
