// Qwen3 (Qwen Team 2025, "Qwen3 Technical Report"): Qwen2's decoder without the q/k/v biases and
// with QK-norm, an RMSNorm over every query and key head (weights [head_dim]) before RoPE, which
// keeps attention logits bounded. head_dim comes from attention.key_length (128 in the released
// sizes, so n_heads * head_dim may differ from dim). Output tied (0.6B-4B) or untied.
// Serves GGUF general.architecture "qwen3" (HF model_type "qwen3").
#include "models/qwen3.h"

#include <fmt/format.h>

#include "models/blocks.h"
#include "models/hparams.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

}  // namespace

Result<ModelGraph> qwen3_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                   const BuildOptions& opt) {
  using graph::Tensor;
  auto cfg = read_decoder_config(Hparams(file, "qwen3"), w, /*read_ffn=*/true);
  if (!cfg) return cfg.error();
  const DecoderConfig& c = *cfg;
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  const int64_t n_ctx = choose_context(opt, c.n_ctx_train);

  graph::Builder b;
  const Step step = declare_step(b, opt, n_ctx);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const AttentionShape attn{c.n_heads, c.n_kv_heads, c.head_dim,
                            graph::RopeAttrs{static_cast<int>(c.n_rot), graph::RopeMode::NeoX,
                                             c.rope_freq_base, c.rope_freq_scale}};

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
    const Tensor gate = weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim});
    const Tensor up = weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim});
    const Tensor down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});

    const Tensor xn = b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm");
    const QkvHeads qkv = qk_norm(b, layer, project_qkv(b, layer, aw, attn, xn), q_norm, k_norm, c.rms_eps);
    Tensor h = x + attend(b, layer, qkv, aw.wo, attn, step, opt.kv_dtype);
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    x = (h +
         swiglu_ffn(b, layer, gate, up, down, b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm")))
            .named(layer + ".out");
  }
  b.output("logits", lm_head(b, w, x, token_embd, c.vocab_size, c.dim, c.rms_eps));  // [O, vocab]
  auto g = b.finish();
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), c, opt, fmt::format(", ffn {}, q/k norm", c.ffn_dim));
}

}  // namespace glass::models
