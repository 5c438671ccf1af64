#pragma once
// Gemma 3n's hyper-parameters and tensor table (gemma3n_config.cpp); the graph is gemma3n.cpp.
#include <vector>

#include "models/gemma.h"

namespace glass::models {

struct Gemma3nConfig {
  GemmaShape shape;             // Gemma 3's decoder: layer kinds, RoPE bases, window, head shapes
  int64_t n_altup = 4;          // altup.num_inputs
  int64_t active = 0;           // altup.active_idx: the stream layers compute on
  int64_t ple_dim = 256;        // embedding_length_per_layer_input
  int64_t laurel_rank = 0;      // rows of blk.0.laurel_l.weight
  int64_t n_kv_layers = 0;      // the first n_kv_layers own a KV cache; later ones share (see kv_source)
  std::vector<float> sparsity;  // per layer: the MLP gate's std multiplier (0: dense)
  float final_softcap = 30.0f;

  // The layer whose cache layer i attends over: itself if it owns one, else the last cache-owning
  // layer of the same kind (local or global).
  int64_t kv_source(int64_t layer) const;
};

struct Gemma3nLayer {
  GemmaLayer base;  // attention, norms and MLP as Gemma 3
  graph::Tensor laurel_l, laurel_r, laurel_post_norm;
  graph::Tensor altup_router, altup_router_norm, altup_predict_coef, altup_correct_coef, altup_correct_scale;
  graph::Tensor inp_gate, proj, post_norm;  // the per-layer input's gate and projection
};

struct Gemma3nWeights {
  graph::Tensor token_embd, output_norm, output;
  graph::Tensor per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm;
  graph::Tensor altup_proj, altup_unembd_proj;  // [n_altup - 1, dim, dim]
  std::vector<Gemma3nLayer> layers;
};

Result<Gemma3nConfig> gemma3n_config_from_gguf(const formats::GgufFile& f, const WeightIndex& w);
Gemma3nWeights declare_gemma3n_weights(graph::Builder& b, const WeightIndex& w, const Gemma3nConfig& c);
Result<graph::Graph> build_gemma3n(const Gemma3nConfig& c, const WeightIndex& w, const BuildOptions& opt);
Result<ModelGraph> gemma3n_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                     const BuildOptions& opt);

}  // namespace glass::models
