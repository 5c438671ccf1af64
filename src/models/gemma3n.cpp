// Gemma 3n (Google 2025, "Gemma 3n" model card; MatFormer, Devvrit et al. 2023), text path. On top of
// Gemma 3's local/global decoder (q/k norms, per-kind RoPE bases, sliding windows) it adds:
//  * AltUp (Baykal et al. 2023, "Alternating Updates"): the hidden state is 4 streams; each layer
//    predicts all streams from a router over the active one, runs attention + MLP on the active
//    stream only, then corrects every stream with the active stream's innovation;
//  * LAuReL (Menghani et al. 2024, "Learned Augmented Residual Layer"): a rank-r residual branch
//    beside attention;
//  * per-layer token embeddings, mixed with a projection of the input embedding and gated into the
//    non-active streams after every layer;
//  * activation sparsity: in the first layers the MLP gate keeps only values above
//    mean + 1.645 std (the top 5% of a Gaussian), before GELU;
//  * KV sharing: the last layers own no cache and attend over the cache of the last cache-owning
//    layer of their kind;
//  * attention scale 1 (q and k RMS-normalised with weights, v without), final logit softcap.
// Serves GGUF general.architecture "gemma3n" (HF model_type "gemma3n", "gemma3n_text"). Keys llama.cpp
// hard-codes are read when present and default to its values (see the fixture README): 4 AltUp
// streams, active stream 0, 256-wide per-layer inputs, period 5 local/global, sparsity std
// multiplier 1.6448533 in layers 0-9, 20 cache-owning layers, final softcap 30. Norm weights are
// the multiplier itself (Gemma 3n checkpoints store it; no +1).
#include "models/gemma3n.h"

#include <fmt/format.h>

#include <cmath>

#include "models/blocks.h"
#include "models/gemma.h"
#include "models/hparams.h"

namespace glass::models {
namespace {

using graph::Dim;
using graph::Shape;
using graph::Tensor;

Dim T() { return Dim::symbol(graph::Sym::T); }
Dim c(int64_t v) { return Dim::constant(v); }

// Stream j of streams [T, n, dim] as [T, dim].
Tensor stream(graph::Builder& b, Tensor streams, int64_t j, int64_t dim) {
  return b.reshape(b.slice(streams, 1, j, c(1)), Shape{T(), c(dim)});
}

// The L2 norm of each row: [..., 1].
Tensor magnitude(graph::Builder& b, Tensor x) { return b.sqrt(b.reduce_sum(x * x)); }

// AltUp's router: tanh(W rms_norm(x) / dim), one coefficient per stream: [T, n_altup].
Tensor router_modalities(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nLayer& l, Tensor x) {
  const Tensor in = b.rms_norm(x, l.altup_router_norm, cfg.shape.rms_eps) *
                    b.scalar(1.0f / static_cast<float>(cfg.shape.dim));
  return b.tanh(b.matmul(in, l.altup_router));
}

// AltUp predict: stream r becomes s_r + sum_c C[r][c] s_c, with the 4x4 mixing matrix C a linear
// function of the router over the active stream. streams: [T, n_altup, dim].
Tensor altup_predict(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nLayer& l, Tensor streams) {
  const int64_t n = cfg.n_altup, dim = cfg.shape.dim;
  const Tensor modalities = router_modalities(b, cfg, l, stream(b, streams, cfg.active, dim));
  const Tensor coefs =
      b.reshape(b.matmul(modalities, l.altup_predict_coef), Shape{T(), c(n), c(n)});  // [T, r, c]
  const Tensor mixed = b.matmul(coefs, b.permute(streams, {0, 2, 1}));                // [T, r, dim]
  return mixed + streams;
}

// AltUp correct: every stream moves by its own multiple (1 + router coefficient) of the innovation,
// the difference between the active stream after the layer and its prediction.
Tensor altup_correct(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nLayer& l, Tensor predictions,
                     Tensor activated) {
  const int64_t n = cfg.n_altup, dim = cfg.shape.dim;
  const Tensor innovation = activated - stream(b, predictions, cfg.active, dim);  // [T, dim]
  const Tensor coefs =
      b.matmul(router_modalities(b, cfg, l, activated), l.altup_correct_coef) + b.scalar(1.0f);
  return b.reshape(coefs, Shape{T(), c(n), c(1)}) * b.reshape(innovation, Shape{T(), c(1), c(dim)}) +
         predictions;
}

// LAuReL: x + norm(R (L x)), a rank-r learned residual.
Tensor laurel(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nLayer& l, Tensor x) {
  const Tensor low_rank = b.matmul(b.matmul(x, l.laurel_l), l.laurel_r);
  return x + b.rms_norm(low_rank, l.laurel_post_norm, cfg.shape.rms_eps);
}

// Gaussian top-k sparsity: keep what exceeds mean + k * std (std with the n - 1 denominator) of
// each row, shifted down by that cutoff: relu(x - cutoff).
Tensor gaussian_topk(graph::Builder& b, Tensor x, int64_t width, float std_multiplier) {
  const auto n = static_cast<float>(width);
  const Tensor mean = b.reduce_sum(x) * b.scalar(1.0f / n);
  const Tensor d = x - mean;
  const Tensor std = b.sqrt(b.reduce_sum(d * d) * b.scalar(1.0f / (n - 1.0f)));
  const Tensor shifted = x - (mean + std * b.scalar(std_multiplier));
  const Tensor zero = b.scalar(0.0f);
  return b.where(b.less_equal(shifted, zero), zero, shifted);
}

// n streams [T, n, dim] from one: the others are per-stream projections rescaled to its magnitude.
Tensor altup_expand(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nWeights& w, Tensor x0) {
  const int64_t dim = cfg.shape.dim;
  const Tensor added = b.permute(b.matmul(b.reshape(x0, Shape{c(1), T(), c(dim)}), w.altup_proj), {1, 0, 2});
  const Tensor scaled = added * b.reshape(magnitude(b, x0), Shape{T(), c(1), c(1)}) / magnitude(b, added);
  return b.concat(b.reshape(x0, Shape{T(), c(1), c(dim)}), scaled, 1).named("altup_streams");  // [T, n, dim]
}

// One hidden state from the streams: the non-active ones unprojected and rescaled to the active
// stream's magnitude, then all averaged.
Tensor altup_merge(graph::Builder& b, const Gemma3nConfig& cfg, const Gemma3nWeights& w, Tensor streams) {
  const int64_t n = cfg.n_altup, dim = cfg.shape.dim;
  const Tensor rest = b.permute(b.slice(streams, 1, 1, c(n - 1)), {1, 0, 2});  // [n-1, T, dim]
  const Tensor un = b.matmul(rest, w.altup_unembd_proj);
  const Tensor active = stream(b, streams, 0, dim);
  const Tensor scaled = un * magnitude(b, active) / magnitude(b, un);  // [n-1, T, dim]
  Tensor sum = active;
  for (int64_t j = 0; j < n - 1; ++j) sum = sum + b.reshape(b.slice(scaled, 0, j, c(1)), Shape{T(), c(dim)});
  return (sum * b.scalar(1.0f / static_cast<float>(n))).named("altup_merged");
}

}  // namespace

Result<graph::Graph> build_gemma3n(const Gemma3nConfig& cfg, const WeightIndex& w, const BuildOptions& opt) {
  const GemmaShape& s = cfg.shape;
  graph::Builder b;
  const Step step = declare_step(b, opt, s.local_window());
  const Gemma3nWeights gw = declare_gemma3n_weights(b, w, cfg);
  const Tensor ones =
      b.constant(std::vector<float>(static_cast<size_t>(s.head_dim), 1.0f), graph::make_shape({s.head_dim}));

  const Tensor x0 = (b.embedding(gw.token_embd, step.tokens) * b.scalar(std::sqrt(static_cast<float>(s.dim))))
                        .named("token_embd");  // [T, dim]
  const Tensor ple =
      per_layer_inputs(b, {gw.per_layer_token_embd, gw.per_layer_model_proj, gw.per_layer_proj_norm}, step,
                       x0, s.n_layers, cfg.ple_dim, s.dim, s.rms_eps);  // [T, n_layers, ple_dim]
  Tensor streams = altup_expand(b, cfg, gw, x0);                        // [T, n_altup, dim]
  std::vector<KvCache> caches(static_cast<size_t>(s.n_layers));
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const Gemma3nLayer& l = gw.layers[static_cast<size_t>(i)];
    const GemmaLayer& g = l.base;
    const Tensor predictions = altup_predict(b, cfg, l, streams).named(layer + ".altup_predict");
    const Tensor active = stream(b, predictions, cfg.active, s.dim);
    const Tensor h = b.rms_norm(active, g.attn_norm, s.rms_eps).named(layer + ".attn_norm");
    const Tensor laurel_out = laurel(b, cfg, l, h).named(layer + ".laurel");

    // Attention; layers past the cache-owning ones reuse the last owner of their kind's cache.
    Tensor q = b.rms_norm(project_heads(b, h, g.wq, s.n_heads, s.head_dim), g.q_norm, s.rms_eps)
                   .named(layer + ".q_norm");
    q = b.rope(q, step.positions, s.rope(i)).named(layer + ".q_rope");  // [T, n_heads, head_dim]
    const int64_t source = cfg.kv_source(i);
    if (source == i) {
      Tensor k = b.rms_norm(project_heads(b, h, g.wk, s.n_kv_heads, s.head_dim), g.k_norm, s.rms_eps)
                     .named(layer + ".k_norm");
      k = b.rope(k, step.positions, s.rope(i)).named(layer + ".k_rope");
      const Tensor v = b.rms_norm(project_heads(b, h, g.wv, s.n_kv_heads, s.head_dim), ones, s.rms_eps)
                           .named(layer + ".v_norm");
      caches[static_cast<size_t>(i)] =
          write_kv(b, layer, {s.n_kv_heads, s.head_dim}, k, v, step, opt.kv_dtype, s.window(i));
    }
    const graph::AttentionAttrs attn{1.0f, {}, s.window(i)};
    const Tensor a =
        attend(b, layer, q, s.n_heads, s.head_dim, caches[static_cast<size_t>(source)], step, attn, g.wo);
    const Tensor attn_gated =
        b.rms_norm(a, g.post_attn_norm, s.rms_eps).named(layer + ".post_attention_norm") + active;
    const Tensor attn_laurel =
        ((attn_gated + laurel_out) * b.scalar(1.0f / std::sqrt(2.0f))).named(layer + ".attn_laurel");

    // MLP, the gate sparsified in the first layers.
    const Tensor f = b.rms_norm(attn_laurel, g.ffn_norm, s.rms_eps).named(layer + ".ffn_norm");
    Tensor gate = b.matmul(f, g.gate).named(layer + ".ffn_gate");
    const float sparsity = cfg.sparsity[static_cast<size_t>(i)];
    if (sparsity > 0.0f) gate = gaussian_topk(b, gate, s.ffn_dim, sparsity).named(layer + ".ffn_gate_sparse");
    const Tensor ffn = b.matmul(b.geglu(gate, b.matmul(f, g.up)).named(layer + ".ffn_act"), g.down);
    const Tensor out =
        (b.rms_norm(ffn, g.post_ffn_norm, s.rms_eps).named(layer + ".post_ffw_norm") + attn_laurel)
            .named(layer + ".out");

    // AltUp correction, then the per-layer input gated in by the corrected active stream and added
    // to every other stream.
    const Tensor corrected = altup_correct(b, cfg, l, predictions, out).named(layer + ".altup_correct");
    Tensor pl = b.gelu(b.matmul(stream(b, corrected, cfg.active, s.dim) * l.altup_correct_scale, l.inp_gate));
    pl = pl * b.reshape(b.slice(ple, 1, i, c(1)), Shape{T(), c(cfg.ple_dim)});  // [T, ple_dim]
    pl = b.rms_norm(b.matmul(pl, l.proj), l.post_norm, s.rms_eps).named(layer + ".per_layer_input");
    const Tensor rest =
        b.slice(corrected, 1, 1, c(cfg.n_altup - 1)) + b.reshape(pl, Shape{T(), c(1), c(s.dim)});
    streams = b.concat(b.slice(corrected, 1, 0, c(1)), rest, 1).named(layer + ".streams");
  }
  const Tensor x = altup_merge(b, cfg, gw, streams);
  gemma_logits(b, step, x, gw.output_norm, gw.output, s.rms_eps, cfg.final_softcap);
  return b.finish();
}

}  // namespace glass::models
