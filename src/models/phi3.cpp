// Phi-3 (Abdin et al. 2024, "Phi-3 Technical Report") and Phi-4-mini: the pre-norm RMSNorm / GQA /
// SwiGLU decoder with its projections fused, q, k and v in one matrix (attn_qkv, rows
// [q | k | v]) and gate and up in another (ffn_up, rows [gate | up]), split here by slicing the
// products. RoPE is rotate-half and may cover only the first rope.dimension_count dims of each head
// (partial rotary, 0.75 in Phi-4-mini). Untied output.
// Serves GGUF general.architecture "phi3" (HF model_type "phi3"). Not covered: LongRoPE (the
// rope_factors_long/short tensors of the 128k-context variants) fails at load, naming the tensor.
#include "models/phi3.h"

#include <fmt/format.h>

#include "models/blocks.h"
#include "models/hparams.h"

namespace glass::models {
namespace {

std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

}  // namespace

Result<ModelGraph> phi3_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                  const BuildOptions& opt) {
  using graph::Tensor;
  auto cfg = read_decoder_config(Hparams(file, "phi3"), w, /*read_ffn=*/true);
  if (!cfg) return cfg.error();
  const DecoderConfig& c = *cfg;
  for (const char* longrope : {"rope_factors_long.weight", "rope_factors_short.weight"})
    if (w.contains(longrope))
      return make_error(
          ErrorCode::Unsupported,
          fmt::format("phi3: tensor '{}' asks for LongRoPE scaling, which glass does not support", longrope));
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
    const Tensor wqkv = weight(b, w, blk(i, "attn_qkv"), {q_dim + 2 * kv_dim, c.dim});
    const Tensor wo = weight(b, w, blk(i, "attn_output"), {c.dim, q_dim});
    const Tensor attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    const Tensor ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    const Tensor gate_up = weight(b, w, blk(i, "ffn_up"), {2 * c.ffn_dim, c.dim});
    const Tensor down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});

    const Tensor xn = b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm");
    Tensor h =
        x + attend(b, layer, project_qkv_fused(b, layer, wqkv, attn, xn), wo, attn, step, opt.kv_dtype);
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);  // only wanted tokens go on
    x = (h + fused_swiglu_ffn(b, layer, gate_up, down, c.ffn_dim,
                              b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm")))
            .named(layer + ".out");
  }
  b.output("logits", lm_head(b, w, x, token_embd, c.vocab_size, c.dim, c.rms_eps));  // [O, vocab]
  auto g = b.finish();
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), c, opt,
                             fmt::format(", ffn {}, fused qkv and gate/up", c.ffn_dim));
}

}  // namespace glass::models
