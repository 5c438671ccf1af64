#pragma once
// Gemma 4's hyper-parameters and tensor table (gemma4_config.cpp); the graph is gemma4.cpp.
#include <optional>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "models/architecture.h"

namespace glass::models {

// What differs between Gemma 4's two layer kinds: local (sliding-window) and global.
struct Gemma4Kind {
  int64_t head_dim = 0, n_rot = 0;
  float rope_base = 10000.0f, rope_scale = 1.0f;
};

struct Gemma4Config {
  int64_t n_layers = 0, dim = 0, n_heads = 0, vocab_size = 0, n_ctx_train = 0;
  float rms_eps = 1e-6f;
  Gemma4Kind local, global;         // global rotates through rope_freqs.weight (proportional RoPE)
  int64_t sliding_window = 0;       // positions a local layer sees, its own included
  std::vector<bool> is_local;       // per layer
  std::vector<int64_t> n_kv_heads;  // per layer
  std::vector<int64_t> ffn_dim;     // per layer (double-wide in the KV-sharing layers)
  int64_t ple_dim = 0;              // embedding_length_per_layer_input; 0: no per-layer inputs
  int64_t n_kv_layers = 0;          // the first n_kv_layers own a KV cache; later ones share (kv_source)
  float final_softcap = 0.0f;       // 0: none
  // Mixture of experts (26B-A4B): in the layers with a router (blk.N.ffn_gate_inp), beside the MLP.
  int64_t n_expert = 0, n_expert_used = 0, expert_ffn_dim = 0;
  std::vector<bool> is_moe;  // per layer

  const Gemma4Kind& kind(int64_t layer) const {
    return is_local[static_cast<size_t>(layer)] ? local : global;
  }
  int64_t window(int64_t layer) const { return is_local[static_cast<size_t>(layer)] ? sliding_window : 0; }
  // sliding_window when some layer is local (the windowed pool's window), else 0.
  int64_t local_window() const;
  // llama.cpp's rule: a layer past the cache-owning ones reads layer n_kv_layers - 2 (local) or
  // n_kv_layers - 1 (global); the config check makes sure that layer is of the same kind.
  int64_t kv_source(int64_t layer) const;
  std::string summary() const;
};

struct Gemma4Layer {
  graph::Tensor attn_norm, wq, wo, q_norm, post_attn_norm;
  graph::Tensor wk, k_norm;         // cache-owning layers only
  std::optional<graph::Tensor> wv;  // absent: the values are the keys before their norm and RoPE
  graph::Tensor ffn_norm, gate, up, down, post_ffn_norm;
  graph::Tensor inp_gate, proj, post_norm;  // the per-layer input's gate and projection (ple_dim > 0)
  std::optional<graph::Tensor> out_scale;   // layer_output_scale: [1]
  // MoE layers: the router and its input scale, the experts (gate and up fused as the converter
  // writes them, or apart), their per-expert output scale, and the norms around both branches.
  graph::Tensor router, router_scale, pre_moe_norm, post_mlp_norm, post_moe_norm;
  graph::Tensor gate_exps, up_exps, down_exps;
  bool fused_gate_up = false;
  std::optional<graph::Tensor> down_exps_scale;
};

struct Gemma4Weights {
  graph::Tensor token_embd, output_norm, output;
  graph::Tensor per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm;  // ple_dim > 0
  std::optional<graph::Tensor> rope_freqs;  // [global n_rot / 2], when the model has global layers
  std::vector<Gemma4Layer> layers;
};

Result<Gemma4Config> gemma4_config_from_gguf(const formats::GgufFile& f, const WeightIndex& w);
Gemma4Weights declare_gemma4_weights(graph::Builder& b, const WeightIndex& w, const Gemma4Config& c);
Result<graph::Graph> build_gemma4(const Gemma4Config& c, const WeightIndex& w, const BuildOptions& opt);
Result<ModelGraph> gemma4_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);

}  // namespace glass::models
