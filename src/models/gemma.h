#pragma once
// What the Gemma 2 and Gemma 3 files share: the hyper-parameters (with per-layer kinds: local
// sliding-window layers and global ones, each kind with its RoPE base), and the tensor table of
// the pre/post-norm decoder layer. The graphs themselves are written in gemma2.cpp / gemma3.cpp.
#include <string>
#include <vector>

#include "graph/builder.h"
#include "models/architecture.h"
#include "models/hparam_reader.h"

namespace glass::models {

struct GemmaShape {
  int64_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, ffn_dim = 0, vocab_size = 0;
  int64_t n_ctx_train = 0;
  int64_t n_rot = 0;
  float rms_eps = 1e-6f;
  float rope_base_global = 10000.0f;
  float rope_base_local = 10000.0f;
  float rope_scale_global = 1.0f;  // linear RoPE scaling (1 / factor), global layers only
  int64_t sliding_window = 0;      // positions a local layer sees, its own included
  std::vector<bool> local;         // per layer: sliding-window (local) or global

  graph::RopeAttrs rope(int64_t layer) const;  // NeoX rotation with the layer kind's base
  int64_t window(int64_t layer) const;         // sliding_window for local layers, 0 for global
  int64_t local_window() const;                // sliding_window when some layer is local, else 0
  float attn_scale() const;                    // 1 / sqrt(head_dim)
  std::string summary() const;
  Status validate(const char* arch) const;
};

// Reads the shared keys; `default_period` is the local/global period used when the file has no
// attention.sliding_window_pattern key (llama.cpp: gemma2 2, gemma3 6, gemma3n 5).
GemmaShape read_gemma_shape(HparamReader& r, const WeightIndex& w, int64_t default_period);

struct GemmaLayer {
  graph::Tensor attn_norm, wq, wk, wv, wo, post_attn_norm;
  graph::Tensor ffn_norm, gate, up, down, post_ffn_norm;
  graph::Tensor q_norm, k_norm;  // [head_dim], only with qk_norm
};

struct GemmaWeights {
  graph::Tensor token_embd, output_norm, output;  // output: output.weight, or token_embd when tied
  std::vector<GemmaLayer> layers;
};

GemmaWeights declare_gemma_weights(graph::Builder& b, const WeightIndex& w, const GemmaShape& s,
                                   bool qk_norm);

// Entry points (registry.cpp).
Result<ModelGraph> gemma2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);
Result<ModelGraph> gemma3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);

}  // namespace glass::models
