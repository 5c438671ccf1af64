// Gemma 4 (Google 2026, "Gemma 4" model card), text path: Gemma 3's local/global decoder, changed as
// Gemma 3n began and then simplified (no AltUp, no LAuReL, no activation sparsity):
//  * local and global layers differ in head size and KV-head count as well as RoPE base; global
//    layers use "proportional" RoPE, which rotates only the first pairs of the head at the full-head
//    frequencies: llama.cpp's converter writes it as rope_freqs.weight, 1 for the rotating pairs and
//    1e30 (no rotation) for the rest;
//  * q and k are RMS-normalised with weights, v without; a layer without attn_v uses its keys
//    (before their norm and RoPE) as values; attention scale 1;
//  * per-layer token embeddings (E2B, E4B), mixed with a projection of the input embedding and
//    gated into the residual after every layer;
//  * KV sharing: the last layers own no cache and read layer n_kv - 2 (local) or n_kv - 1 (global);
//    their MLPs may be twice as wide (feed_forward_length per layer);
//  * a per-layer output scale (layer_output_scale) and an optional final logit softcap;
//  * (26B-A4B) a mixture of experts beside the MLP in every layer, each branch post-normed and
//    the two summed before the post-FFN norm.
// Serves GGUF general.architecture "gemma4". Norm weights are the multiplier itself (no +1).
#include "models/gemma4.h"

#include <fmt/format.h>

#include <cmath>

#include "models/blocks.h"
#include "models/gemma.h"

namespace glass::models {
namespace {

using graph::Dim;
using graph::Shape;
using graph::Tensor;

Dim T() { return Dim::symbol(graph::Sym::T); }
Dim c(int64_t v) { return Dim::constant(v); }

// The mixture of experts on the attention residual x: routed by softmax(router(rms_norm(x) / sqrt(dim)
// x router_scale)), top n_expert_used renormalised, GeGLU experts on the pre-normed x, each expert's
// output times its scale; post-normed.
Tensor experts(graph::Builder& b, const Gemma4Config& cfg, const Gemma4Layer& l, const std::string& layer,
               Tensor x, Tensor ones_dim) {
  const Tensor routed = b.rms_norm(x, ones_dim, cfg.rms_eps) *
                        b.scalar(1.0f / std::sqrt(static_cast<float>(cfg.dim))) * l.router_scale;
  const Tensor probs =
      softmax(b, b.matmul(routed, l.router).named(layer + ".ffn_router")).named(layer + ".ffn_probs");
  const graph::MoeAttrs moe{static_cast<int>(cfg.n_expert_used), true, graph::MoeActivation::GeGlu,
                            l.fused_gate_up};
  const Tensor h = b.rms_norm(x, l.pre_moe_norm, cfg.rms_eps).named(layer + ".pre_ffw_norm_2");
  const Tensor y =
      b.moe(h, probs, l.gate_exps, l.up_exps, l.down_exps, moe, l.down_exps_scale).named(layer + ".ffn_moe");
  return b.rms_norm(y, l.post_moe_norm, cfg.rms_eps).named(layer + ".post_ffw_norm_2");
}

graph::RopeAttrs rope_attrs(const Gemma4Kind& k) {
  return graph::RopeAttrs{static_cast<int>(k.n_rot), graph::RopeMode::NeoX, k.rope_base, k.rope_scale};
}

}  // namespace

Result<graph::Graph> build_gemma4(const Gemma4Config& cfg, const WeightIndex& w, const BuildOptions& opt) {
  graph::Builder b;
  const Step step = declare_step(b, opt, cfg.local_window());
  const Gemma4Weights gw = declare_gemma4_weights(b, w, cfg);
  auto ones = [&](int64_t n) {
    return b.constant(std::vector<float>(static_cast<size_t>(n), 1.0f), graph::make_shape({n}));
  };
  const Tensor ones_local = ones(cfg.local.head_dim), ones_global = ones(cfg.global.head_dim);
  const Tensor ones_dim = ones(cfg.dim);

  Tensor x = (b.embedding(gw.token_embd, step.tokens) * b.scalar(std::sqrt(static_cast<float>(cfg.dim))))
                 .named("token_embd");  // [T, dim]
  std::optional<Tensor> ple;
  if (cfg.ple_dim > 0)  // [T, n_layers, ple_dim]
    ple = per_layer_inputs(b, {gw.per_layer_token_embd, gw.per_layer_model_proj, gw.per_layer_proj_norm},
                           step, x, cfg.n_layers, cfg.ple_dim, cfg.dim, cfg.rms_eps);
  std::vector<KvCache> caches(static_cast<size_t>(cfg.n_layers));
  for (int64_t i = 0; i < cfg.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const Gemma4Layer& l = gw.layers[static_cast<size_t>(i)];
    const Gemma4Kind& kind = cfg.kind(i);
    const bool local = cfg.is_local[static_cast<size_t>(i)];
    const int64_t hd = kind.head_dim, n_kv = cfg.n_kv_heads[static_cast<size_t>(i)];
    const std::optional<Tensor> freqs = local ? std::nullopt : gw.rope_freqs;

    // Attention; layers past the cache-owning ones read an earlier layer's cache.
    const Tensor h = b.rms_norm(x, l.attn_norm, cfg.rms_eps).named(layer + ".attn_norm");
    Tensor q = b.rms_norm(project_heads(b, h, l.wq, cfg.n_heads, hd), l.q_norm, cfg.rms_eps)
                   .named(layer + ".q_norm");
    q = b.rope(q, step.positions, rope_attrs(kind), freqs).named(layer + ".q_rope");  // [T, n_heads, hd]
    const int64_t source = cfg.kv_source(i);
    if (source == i) {
      const Tensor k_raw = project_heads(b, h, l.wk, n_kv, hd);
      const Tensor v_raw = l.wv ? project_heads(b, h, *l.wv, n_kv, hd) : k_raw;
      Tensor k = b.rms_norm(k_raw, l.k_norm, cfg.rms_eps).named(layer + ".k_norm");
      k = b.rope(k, step.positions, rope_attrs(kind), freqs).named(layer + ".k_rope");
      const Tensor v =
          b.rms_norm(v_raw, local ? ones_local : ones_global, cfg.rms_eps).named(layer + ".v_norm");
      caches[static_cast<size_t>(i)] =
          write_kv(b, layer, {n_kv, hd}, k, v, step, opt.kv_dtype, cfg.window(i));
    }
    const graph::AttentionAttrs attn{1.0f, {}, cfg.window(i)};
    const Tensor a =
        attend(b, layer, q, cfg.n_heads, hd, caches[static_cast<size_t>(source)], step, attn, l.wo);
    x = (x + b.rms_norm(a, l.post_attn_norm, cfg.rms_eps).named(layer + ".post_attention_norm"))
            .named(layer + ".attn_residual");

    // GeGLU MLP between its pre- and post-norm; in MoE layers, the experts beside it.
    Tensor f = geglu_ffn(b, layer, l.gate, l.up, l.down,
                         b.rms_norm(x, l.ffn_norm, cfg.rms_eps).named(layer + ".ffn_norm"));
    if (cfg.is_moe[static_cast<size_t>(i)])
      f = b.rms_norm(f, l.post_mlp_norm, cfg.rms_eps) + experts(b, cfg, l, layer, x, ones_dim);
    x = (x + b.rms_norm(f, l.post_ffn_norm, cfg.rms_eps).named(layer + ".post_ffw_norm"))
            .named(layer + ".ffn_residual");

    // The per-layer input, gated by the layer's output, projected back and added.
    if (ple) {
      Tensor pl = b.gelu(b.matmul(x, l.inp_gate));
      pl = pl * b.reshape(b.slice(*ple, 1, i, c(1)), Shape{T(), c(cfg.ple_dim)});  // [T, ple_dim]
      x = (x + b.rms_norm(b.matmul(pl, l.proj), l.post_norm, cfg.rms_eps).named(layer + ".per_layer_input"))
              .named(layer + ".per_layer_residual");
    }
    if (l.out_scale) x = x * *l.out_scale;
    x = x.named(layer + ".out");
  }
  gemma_logits(b, step, x, gw.output_norm, gw.output, cfg.rms_eps, cfg.final_softcap);
  return b.finish();
}

Result<ModelGraph> gemma4_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = gemma4_config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_gemma4(*c, weights, opt);
  if (!g) return g.error();
  return finish_model_graph(std::move(*g), c->vocab_size, c->n_ctx_train, c->n_layers, opt, c->summary(),
                            c->local_window());
}

}  // namespace glass::models
