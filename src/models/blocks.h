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
