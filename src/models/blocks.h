#pragma once
// Blocks shared by decoder-only transformer families: the step's inputs and cache, self-attention
// over the KV cache, and the gated MLP. Architecture files compose these like the paper does.
#include <optional>
#include <string>

#include "graph/builder.h"
#include "models/architecture.h"

namespace glass::models {

// What every layer of one step sees.
struct Step {
  graph::Tensor tokens;     // [T] i32
  graph::Tensor positions;  // [T] i32
  graph::Tensor seq_ids;    // [T] i32: the sequence each token belongs to
  graph::Tensor slots;      // [T] i32: cache rows this step writes
  graph::Tensor kv_pos;     // [C] i32: the position stored in each cache row, after this step's write
  graph::Tensor kv_seq;     // [C] i32: the sequence of each cache row, after this step's write
};

// Declares the step inputs and the shared cache.pos / cache.seq state, and writes this step's
// positions and sequence ids into them.
Step declare_step(graph::Builder& b, int64_t n_ctx);

// The kind of a state tensor declared by these blocks, from its name.
StateKind state_kind(const std::string& state_name);

struct AttentionWeights {
  graph::Tensor wq, wk, wv, wo;  // [n_heads*head_dim, dim], [n_kv*head_dim, dim] x2, [dim, n_heads*head_dim]
};

struct AttentionShape {
  int64_t n_heads, n_kv_heads, head_dim, n_ctx;
  graph::RopeAttrs rope;
  std::optional<graph::Tensor> rope_freqs;  // [n_rot/2] per-frequency divisors (Llama 3 scaling)
};

// q/k/v projections, RoPE on q and k, this step's K/V rows into the layer's cache, attention over
// cache rows [0, S), output projection. `layer` prefixes node names ("blk.3").
graph::Tensor self_attention(graph::Builder& b, const std::string& layer, const AttentionWeights& w,
                             const AttentionShape& s, graph::Tensor x, const Step& step,
                             graph::DType kv_dtype);

// down(swiglu(gate(x), up(x))).
graph::Tensor swiglu_ffn(graph::Builder& b, const std::string& layer, graph::Tensor gate, graph::Tensor up,
                         graph::Tensor down, graph::Tensor x);

}  // namespace glass::models

// ---- Finer-grained attention blocks, for families that normalise q/k per head, choose RoPE and
// windows per layer kind, or share K/V between layers (Gemma 2 / 3 / 3n). ----

namespace glass::models {

// x W reshaped to heads: [T, n, head_dim].
graph::Tensor project_heads(graph::Builder& b, graph::Tensor x, graph::Tensor w, int64_t n, int64_t head_dim);

// A layer's K/V cache after this step's write: [C, n_kv_heads, head_dim] each. Attention reads it;
// with KV sharing, later layers read another layer's.
struct KvCache {
  graph::Tensor k, v;
};

// Declares `layer`'s K and V cache state, writes this step's rows (k, v: [T, n_kv_heads, head_dim])
// at the step's slots and returns the caches after the write.
struct KvShape {
  int64_t n_ctx, n_kv_heads, head_dim;
};
KvCache write_kv(graph::Builder& b, const std::string& layer, const KvShape& s, graph::Tensor k,
                 graph::Tensor v, const Step& step, graph::DType kv_dtype);

// Attention of q [T, n_heads, head_dim] over `kv` (rows [0, S), the step's position / sequence
// mask and the attrs' window and softcap), then the output projection: [T, dim].
graph::Tensor attend(graph::Builder& b, const std::string& layer, graph::Tensor q, int64_t n_heads,
                     int64_t head_dim, const KvCache& kv, const Step& step, graph::AttentionAttrs attrs,
                     graph::Tensor wo);

// down(geglu(gate(x), up(x))): Gemma's gated MLP with tanh-GELU.
graph::Tensor geglu_ffn(graph::Builder& b, const std::string& layer, graph::Tensor gate, graph::Tensor up,
                        graph::Tensor down, graph::Tensor x);

}  // namespace glass::models

namespace glass::models {

// The ModelGraph around a finished graph: cache capacity, state kinds, summary line.
ModelGraph finish_model_graph(graph::Graph g, int64_t vocab_size, int64_t n_ctx_train, int64_t n_layers,
                              const BuildOptions& opt, std::string summary);

}  // namespace glass::models
