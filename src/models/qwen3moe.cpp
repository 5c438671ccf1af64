// Qwen3-MoE (Qwen Team 2025, "Qwen3 Technical Report"): Qwen3's attention (QK-norm, rotate-half
// RoPE, GQA) with every dense MLP replaced by a mixture of experts: a router gives softmax
// probabilities over expert_count experts, each token uses the expert_used_count most probable
// ones with their probabilities renormalised to sum 1 (norm_topk_prob), and each expert is a SwiGLU
// MLP of width expert_feed_forward_length. No shared expert. Experts are stored stacked as 3-D
// tensors (ffn_{gate,up,down}_exps); the moe op reads only the chosen experts' rows.
// Serves GGUF general.architecture "qwen3moe" (HF model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B).
// feed_forward_length is written by converters but unused: the expert width is its own key.
#include "models/qwen3moe.h"

#include <fmt/format.h>

#include "models/blocks.h"
#include "models/hparams.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

struct Experts {
  int64_t count = 0;  // expert_count
  int64_t used = 0;   // expert_used_count
  int64_t ffn_dim = 0;
  bool normalize = true;  // expert_weights_norm; Qwen3-MoE ships norm_topk_prob = true (llama.cpp fixes it)
};

Result<Experts> read_experts(const Hparams& hp) {
  Experts e;
  for (auto [field, key] : {std::pair{&e.count, "expert_count"}, std::pair{&e.used, "expert_used_count"},
                            std::pair{&e.ffn_dim, "expert_feed_forward_length"}}) {
    auto v = hp.count(key);
    if (!v) return v.error();
    *field = *v;
  }
  auto norm = hp.flag_or("expert_weights_norm", true);
  if (!norm) return norm.error();
  e.normalize = *norm;
  auto gating = hp.count_or("expert_gating_func", 1);  // llama.cpp's enum: 1 softmax, 2 sigmoid
  if (!gating) return gating.error();
  if (*gating != 1)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {} (only 1, softmax, is supported)",
                                                          hp.arch(), hp.key("expert_gating_func"), *gating));
  auto shared = hp.count_or("expert_shared_count", 0);
  if (!shared) return shared.error();
  if (*shared != 0)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {}: shared experts are not supported",
                                                          hp.arch(), hp.key("expert_shared_count"), *shared));
  if (e.count <= 0 || e.used <= 0 || e.used > e.count || e.ffn_dim <= 0)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: {} = {} must be within [1, {} = {}] and {} = {} positive", hp.arch(),
                                  hp.key("expert_used_count"), e.used, hp.key("expert_count"), e.count,
                                  hp.key("expert_feed_forward_length"), e.ffn_dim));
  return e;
}

}  // namespace

Result<ModelGraph> qwen3moe_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                      const BuildOptions& opt) {
  using graph::Tensor;
  const Hparams hp(file, "qwen3moe");
  auto cfg = read_decoder_config(hp, w, /*read_ffn=*/false);
  if (!cfg) return cfg.error();
  auto experts = read_experts(hp);
  if (!experts) return experts.error();
  const DecoderConfig& c = *cfg;
  const Experts& e = *experts;
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const int64_t n_ctx = choose_context(opt, c.n_ctx_train);

  graph::Builder b;
  const Step step = declare_step(b, opt, n_ctx);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const AttentionShape attn{c.n_heads, c.n_kv_heads, c.head_dim,
                            graph::RopeAttrs{static_cast<int>(c.n_rot), graph::RopeMode::NeoX,
                                             c.rope_freq_base, c.rope_freq_scale}};
  const graph::MoeAttrs routing{static_cast<int>(e.used), e.normalize};

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const AttentionWeights aw{
        weight(b, w, blk(i, "attn_q"), {q_dim, c.dim}), weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim}),
        weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim}), weight(b, w, blk(i, "attn_output"), {c.dim, q_dim})};
    const Tensor q_norm = weight(b, w, blk(i, "attn_q_norm"), {c.head_dim});
    const Tensor k_norm = weight(b, w, blk(i, "attn_k_norm"), {c.head_dim});
    const Tensor attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    const Tensor ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    const MoeWeights moe{weight(b, w, blk(i, "ffn_gate_inp"), {e.count, c.dim}),
                         weight(b, w, blk(i, "ffn_gate_exps"), {e.count, e.ffn_dim, c.dim}),
                         weight(b, w, blk(i, "ffn_up_exps"), {e.count, e.ffn_dim, c.dim}),
                         weight(b, w, blk(i, "ffn_down_exps"), {e.count, c.dim, e.ffn_dim})};

    const Tensor xn = b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm");
    const QkvHeads qkv = qk_norm(b, layer, project_qkv(b, layer, aw, attn, xn), q_norm, k_norm, c.rms_eps);
    Tensor h = x + attend(b, layer, qkv, aw.wo, attn, step, opt.kv_dtype);
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    x = (h + moe_ffn(b, layer, moe, routing, b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm")))
            .named(layer + ".out");
  }
  b.output("logits", lm_head(b, w, x, token_embd, c.vocab_size, c.dim, c.rms_eps));  // [O, vocab]
  auto g = b.finish();
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), c, opt,
                             fmt::format(", {} experts (top {}{}) x ffn {}, q/k norm", e.count, e.used,
                                         e.normalize ? ", renormalised" : "", e.ffn_dim));
}

}  // namespace glass::models
