#pragma once
// Blocks shared by decoder-only transformer families: the step's inputs and cache, self-attention
// over the KV cache, and the gated MLP. Architecture files compose these like the paper does.
#include <optional>
#include <string>

#include "graph/builder.h"
#include "models/architecture.h"

namespace glass::models {

// One pool of KV cache rows as a step addresses it. Its size is the session's: the symbol `rows`
// (C, or W for the sliding-window layers' pool), bound per session.
struct CacheInputs {
  graph::Tensor slots;         // [T] i32: cache rows this step writes
  graph::Tensor block_tables;  // [N, M] i32: each sequence's cache blocks, in position order
  graph::Sym rows = graph::Sym::C;
  int64_t block_size = 16;
};

// What every layer of one step sees.

struct Step {
  graph::Tensor tokens;       // [T] i32
  graph::Tensor positions;    // [T] i32
  graph::Tensor seq_ids;      // [T] i32: the sequence each token belongs to
  graph::Tensor output_rows;  // [O] i32: the tokens (indices into [0, T)) whose logits are wanted
  CacheInputs full;           // layers that attend to the whole causal prefix
  // Sliding-window layers' own, smaller pool (window_slots, window_block_tables), whose blocks that
  // fell out of every later query's window go back; declared when the family has such layers.
  std::optional<CacheInputs> windowed;
  // Recurrent layers' state slot of every sequence id (recurrent_slots, [N] i32), declared when the
  // family has such layers; their states are [R, ...] pools of slots (kv/recurrent.h).
  std::optional<graph::Tensor> recurrent_slots;
  // The pool of a layer attending over the last `window` positions (0: all of them).
  const CacheInputs& pool_for(int64_t window) const { return window > 0 && windowed ? *windowed : full; }
};

// Declares the step inputs, the block tables among them, for a cache in blocks of
// opt.kv_block_size; with window > 0, also the inputs of the sliding-window pool.
// With `recurrent`, also the recurrent layers' slot input.
Step declare_step(graph::Builder& b, const BuildOptions& opt, int64_t window = 0, bool recurrent = false);

// The kind of a state tensor declared by these blocks, from its name.
StateKind state_kind(const std::string& state_name);

struct AttentionWeights {
  graph::Tensor wq, wk, wv, wo;  // [n_heads*head_dim, dim], [n_kv*head_dim, dim] x2, [dim, n_heads*head_dim]
};

struct AttentionShape {
  int64_t n_heads, n_kv_heads, head_dim;
  graph::RopeAttrs rope;                    // n_rot 0: q and k are not rotated (NoPE layers)
  std::optional<graph::Tensor> rope_freqs;  // [n_rot/2] per-frequency divisors (Llama 3 scaling)
};

// q/k/v projections, RoPE on q and k, this step's K/V rows into the layer's cache, attention over
// the sequence's cached positions, output projection. `layer` prefixes node names ("blk.3").
graph::Tensor self_attention(graph::Builder& b, const std::string& layer, const AttentionWeights& w,
                             const AttentionShape& s, graph::Tensor x, const Step& step,
                             graph::DType kv_dtype);

// self_attention in parts, for families that change one of them.
// One step's q, k and v split into heads: [T, n_heads, head_dim], [T, n_kv_heads, head_dim] x2.
struct QkvHeads {
  graph::Tensor q, k, v;
};
// Biases of the q/k/v projections (Qwen2): [n_heads*head_dim], [n_kv_heads*head_dim] x2.
struct QkvBiases {
  graph::Tensor bq, bk, bv;
};
// x wq^T (+ bq), x wk^T (+ bk), x wv^T (+ bv).
QkvHeads project_qkv(graph::Builder& b, const std::string& layer, const AttentionWeights& w,
                     const AttentionShape& s, graph::Tensor x, const std::optional<QkvBiases>& biases = {});
// One fused projection whose output columns are [q | k | v] (Phi-3 attn_qkv), split by slicing.
QkvHeads project_qkv_fused(graph::Builder& b, const std::string& layer, graph::Tensor wqkv,
                           const AttentionShape& s, graph::Tensor x);
// RMSNorm of every q and k head over head_dim, weights [head_dim], before RoPE (Qwen3 q/k norm).
QkvHeads qk_norm(graph::Builder& b, const std::string& layer, QkvHeads h, graph::Tensor q_norm,
                 graph::Tensor k_norm, float eps);
// RoPE on q and k, the K/V rows into the cache, attention over the sequence's positions, output
// projection wo.
graph::Tensor attend(graph::Builder& b, const std::string& layer, const QkvHeads& h, graph::Tensor wo,
                     const AttentionShape& s, const Step& step, graph::DType kv_dtype);

// down(swiglu(gate(x), up(x))).
graph::Tensor swiglu_ffn(graph::Builder& b, const std::string& layer, graph::Tensor gate, graph::Tensor up,
                         graph::Tensor down, graph::Tensor x);
// The same with gate and up stored as one matrix whose rows are [gate | up] (Phi-3 ffn_up).
graph::Tensor fused_swiglu_ffn(graph::Builder& b, const std::string& layer, graph::Tensor gate_up,
                               graph::Tensor down, int64_t ffn_dim, graph::Tensor x);

// The rows of x ([T, dim]) of the tokens whose logits the step wants ([O, dim]). Models apply it
// after the last attention, where every op left is per token, so the LM head runs on O rows only.
graph::Tensor select_output_rows(graph::Builder& b, const Step& step, graph::Tensor x);

// The final RMSNorm and the output projection (output.weight, or the tied token_embd.weight when
// the file has none): logits [T, vocab_size].
graph::Tensor lm_head(graph::Builder& b, const WeightIndex& w, graph::Tensor x, graph::Tensor token_embd,
                      int64_t vocab_size, int64_t dim, float rms_eps);

// softmax over the last axis: exp(x - max(x)) / sum(exp(x - max(x))).
graph::Tensor softmax(graph::Builder& b, graph::Tensor x);
// 1 / (1 + exp(-x)).
graph::Tensor sigmoid(graph::Builder& b, graph::Tensor x);
// log(1 + exp(x)), and x itself above 20 (where the two agree in f32), as ggml computes it.
graph::Tensor softplus(graph::Builder& b, graph::Tensor x);
// x / max(|x|, eps) over the last axis.
graph::Tensor l2_norm(graph::Builder& b, graph::Tensor x, float eps);

// Mixture-of-experts SwiGLU FFN with softmax routing: probabilities softmax(x router^T) over the
// experts, then the moe op (top n_used, optionally renormalised). Experts stacked
// [n_expert, ffn, dim] (gate, up) and [n_expert, dim, ffn] (down).
struct MoeWeights {
  graph::Tensor router, gate_exps, up_exps, down_exps;  // router: [n_expert, dim]
};
graph::Tensor moe_ffn(graph::Builder& b, const std::string& layer, const MoeWeights& w,
                      const graph::MoeAttrs& routing, graph::Tensor x);

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

// Declares `layer`'s K and V cache state (the step's pool of cache rows), writes this step's rows
// (k, v: [T, n_kv_heads, head_dim]) at the step's slots and returns the caches after the write.
struct KvShape {
  int64_t n_kv_heads, head_dim;
};
// `window`: the layer's attention window (0: global), which decides its pool.
KvCache write_kv(graph::Builder& b, const std::string& layer, const KvShape& s, graph::Tensor k,
                 graph::Tensor v, const Step& step, graph::DType kv_dtype, int64_t window);

// Attention of q [T, n_heads, head_dim] over `kv` (each token's own sequence's positions through
// the block tables, causal, the attrs' window and softcap), then the output projection: [T, dim].
// `sinks` [n_heads]: gpt-oss's per-head sink logits (graph/ops/attention.cpp).
graph::Tensor attend(graph::Builder& b, const std::string& layer, graph::Tensor q, int64_t n_heads,
                     int64_t head_dim, const KvCache& kv, const Step& step, graph::AttentionAttrs attrs,
                     graph::Tensor wo, std::optional<graph::Tensor> sinks = {});

// down(geglu(gate(x), up(x))): Gemma's gated MLP with tanh-GELU.
graph::Tensor geglu_ffn(graph::Builder& b, const std::string& layer, graph::Tensor gate, graph::Tensor up,
                        graph::Tensor down, graph::Tensor x);

}  // namespace glass::models

namespace glass::models {

// The ModelGraph around a finished graph: cache capacity, state kinds, summary line.
// Fills m.state_kinds and m.state_windowed from m.graph's states.
void index_states(ModelGraph& m);

// `window`: the sliding window of the layers in the windowed pool (declare_step's), 0 when none.
ModelGraph finish_model_graph(graph::Graph g, int64_t vocab_size, int64_t n_ctx_train, int64_t n_layers,
                              const BuildOptions& opt, std::string summary, int64_t window = 0);

}  // namespace glass::models
