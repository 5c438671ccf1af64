#pragma once
// Hyper-parameters from GGUF metadata, shared by the decoder-only families: "<arch>.<key>" lookups
// whose errors name the key, and the configuration every pre-norm RoPE transformer here reads the
// same way (llama.cpp's llm_load_hparams reads these keys for every such architecture).
#include <cstdint>
#include <string>
#include <string_view>

#include "formats/gguf.h"
#include "glass/result.h"
#include "models/architecture.h"
#include "models/weights.h"

namespace glass::models {

// "<arch>.<key>" metadata of one file. A missing required key, or a value of the wrong type, is an
// InvalidFile error naming the full key.
class Hparams {
 public:
  Hparams(const formats::GgufFile& file, std::string_view arch) : file_(file), arch_(arch) {}

  const std::string& arch() const { return arch_; }
  const formats::GgufFile& file() const { return file_; }
  std::string key(std::string_view k) const { return arch_ + "." + std::string(k); }
  bool has(std::string_view k) const { return file_.find(key(k)) != nullptr; }

  Result<int64_t> count(std::string_view k) const;  // a required unsigned integer
  Result<int64_t> count_or(std::string_view k, int64_t fallback) const;
  Result<float> real(std::string_view k) const;
  Result<float> real_or(std::string_view k, float fallback) const;
  Result<bool> flag_or(std::string_view k, bool fallback) const;

 private:
  const formats::GgufFile& file_;
  std::string arch_;
};

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
// vocabulary size (vocab_size or the rows of token_embd.weight); then validates them.
Result<DecoderConfig> read_decoder_config(const Hparams& hp, const WeightIndex& weights, bool read_ffn);

// The ModelGraph of a finished graph: sizes, state kinds and the one-line summary.
ModelGraph decoder_model_graph(graph::Graph g, const DecoderConfig& c, const BuildOptions& opt,
                               const std::string& extra_summary);

}  // namespace glass::models
