#include "models/decoder.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what, const char* part = "weight") {
  return fmt::format("blk.{}.{}.{}", i, what, part);
}

std::string summary(const DecoderConfig& c, const DecoderRecipe& r) {
  if (r.ffn == DecoderFfn::Moe)
    return fmt::format(", {} experts (top {}{}) x ffn {}{}", r.experts.count, r.experts.used,
                       r.experts.normalize ? ", renormalised" : "", r.experts.ffn_dim,
                       r.qk_norm ? ", q/k norm" : "");
  std::string s = fmt::format(", ffn {}", c.ffn_dim);
  if (r.qkv_bias) s += ", qkv bias";
  if (r.qk_norm) s += ", q/k norm";
  if (r.fused_qkv) s += ", fused qkv and gate/up";
  return s;
}

}  // namespace

Result<ModelGraph> build_decoder(HparamReader& hp, const WeightIndex& w, const BuildOptions& opt,
                                 const DecoderRecipe& r) {
  using graph::Tensor;
  auto cfg = read_decoder_config(hp, w, /*read_ffn=*/r.ffn != DecoderFfn::Moe);
  if (!cfg) return cfg.error();
  const DecoderConfig& c = *cfg;
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const DecoderExperts& e = r.experts;

  graph::Builder b;
  const Step step = declare_step(b, opt);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const AttentionShape attn{c.n_heads, c.n_kv_heads, c.head_dim,
                            graph::RopeAttrs{static_cast<int>(c.n_rot), graph::RopeMode::NeoX,
                                             c.rope_freq_base, c.rope_freq_scale}};
  const graph::MoeAttrs routing{static_cast<int>(e.used), e.normalize};

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    // Attention weights: wq [q_dim, dim], wk / wv [kv_dim, dim], wo [dim, q_dim], or one wqkv.
    std::optional<AttentionWeights> aw;
    std::optional<Tensor> wqkv;
    if (r.fused_qkv) {
      wqkv = weight(b, w, blk(i, "attn_qkv"), {q_dim + 2 * kv_dim, c.dim});
    } else {
      aw = AttentionWeights{weight(b, w, blk(i, "attn_q"), {q_dim, c.dim}),
                            weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim}),
                            weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim}),
                            weight(b, w, blk(i, "attn_output"), {c.dim, q_dim})};
    }
    const Tensor wo = aw ? aw->wo : weight(b, w, blk(i, "attn_output"), {c.dim, q_dim});
    std::optional<QkvBiases> bias;
    if (r.qkv_bias)
      bias = QkvBiases{weight(b, w, blk(i, "attn_q", "bias"), {q_dim}),
                       weight(b, w, blk(i, "attn_k", "bias"), {kv_dim}),
                       weight(b, w, blk(i, "attn_v", "bias"), {kv_dim})};
    std::optional<Tensor> q_norm, k_norm;
    if (r.qk_norm) {
      q_norm = weight(b, w, blk(i, "attn_q_norm"), {c.head_dim});
      k_norm = weight(b, w, blk(i, "attn_k_norm"), {c.head_dim});
    }
    const Tensor attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    const Tensor ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    // MLP weights: gate / up [ffn_dim, dim] (fused: [2 ffn_dim, dim]), down [dim, ffn_dim]; experts
    // stacked [count, ...].
    Tensor gate, up, down;
    MoeWeights moe;
    switch (r.ffn) {
      case DecoderFfn::SwiGlu:
        gate = weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim});
        up = weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim});
        down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});
        break;
      case DecoderFfn::FusedSwiGlu:
        up = weight(b, w, blk(i, "ffn_up"), {2 * c.ffn_dim, c.dim});
        down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});
        break;
      case DecoderFfn::Moe:
        moe = MoeWeights{weight(b, w, blk(i, "ffn_gate_inp"), {e.count, c.dim}),
                         weight(b, w, blk(i, "ffn_gate_exps"), {e.count, e.ffn_dim, c.dim}),
                         weight(b, w, blk(i, "ffn_up_exps"), {e.count, e.ffn_dim, c.dim}),
                         weight(b, w, blk(i, "ffn_down_exps"), {e.count, c.dim, e.ffn_dim})};
        break;
    }

    const Tensor xn = b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm");
    QkvHeads qkv =
        wqkv ? project_qkv_fused(b, layer, *wqkv, attn, xn) : project_qkv(b, layer, *aw, attn, xn, bias);
    if (r.qk_norm) qkv = qk_norm(b, layer, qkv, *q_norm, *k_norm, c.rms_eps);
    Tensor h = x + attend(b, layer, qkv, wo, attn, step, opt.kv_dtype);
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    const Tensor hn = b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm");
    const Tensor ffn = r.ffn == DecoderFfn::SwiGlu ? swiglu_ffn(b, layer, gate, up, down, hn)
                       : r.ffn == DecoderFfn::FusedSwiGlu
                           ? fused_swiglu_ffn(b, layer, up, down, c.ffn_dim, hn)
                           : moe_ffn(b, layer, moe, routing, hn);
    x = (h + ffn).named(layer + ".out");
  }
  b.output("logits", lm_head(b, w, x, token_embd, c.vocab_size, c.dim, c.rms_eps));  // [O, vocab]
  auto g = b.finish();
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), c, opt, summary(c, r));
}

}  // namespace glass::models
