#pragma once
// What the Gemma 2 and Gemma 3 files share: the hyper-parameters (with per-layer kinds: local
// sliding-window layers and global ones, each kind with its RoPE base), and the tensor table of
// the pre/post-norm decoder layer, and the one graph both build (build_gemma, with what differs as
// a GemmaVariant); gemma2.cpp / gemma3.cpp read their keys. Gemma 3n builds on the same pieces.
#include <string>
#include <vector>

#include "graph/builder.h"
#include "models/architecture.h"
#include "models/blocks.h"
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

// What Gemma 2 and Gemma 3 do differently inside the same layer.
struct GemmaVariant {
  bool qk_norm = false;        // Gemma 3: q and k RMS-normalised per head (weights [head_dim]) before RoPE
  float attn_softcap = 0.0f;   // Gemma 2: attention scores soft-capped; 0: none
  float final_softcap = 0.0f;  // logits soft-capped; 0: none
};

// The Gemma 2 / Gemma 3 graph: embedding x sqrt(dim); per layer pre-norm attention (local layers
// see only the last sliding_window positions) -> post-attention norm -> residual, pre-norm GeGLU
// MLP -> post-FFN norm -> residual; final norm, LM head, optional final softcap.
Result<graph::Graph> build_gemma(const GemmaShape& s, const GemmaVariant& v, const WeightIndex& w,
                                 const BuildOptions& opt);

// The final norm of the rows whose logits are wanted, the LM head and, when final_softcap > 0, the
// final softcap: the "logits" output [O, vocab_size] of every Gemma graph.
void gemma_logits(graph::Builder& b, const Step& step, graph::Tensor x, graph::Tensor output_norm,
                  graph::Tensor output, float rms_eps, float final_softcap);

// Gemma 3n's and Gemma 4's per-layer inputs [T, n_layers, ple_dim]: the per-layer token embedding
// (x sqrt(ple_dim)) plus the RMS-normed projection of the scaled input embedding x0 (x 1/sqrt(dim)),
// together x 1/sqrt(2).
struct PerLayerInputWeights {
  graph::Tensor token_embd, model_proj,
      proj_norm;  // [vocab, n_layers ple_dim], [n_layers ple_dim, dim], [ple_dim]
};
graph::Tensor per_layer_inputs(graph::Builder& b, const PerLayerInputWeights& w, const Step& step,
                               graph::Tensor x0, int64_t n_layers, int64_t ple_dim, int64_t dim,
                               float rms_eps);

// Entry points (registry.cpp).
Result<ModelGraph> gemma2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);
Result<ModelGraph> gemma3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt);

}  // namespace glass::models
