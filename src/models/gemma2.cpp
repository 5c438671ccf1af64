// Gemma 2 (Gemma Team 2024, "Gemma 2: Improving Open Language Models at a Practical Size"): a
// pre- and post-norm decoder whose layers alternate local sliding-window attention and global
// attention, with soft-capped attention scores and final logits, a GeGLU (tanh-GELU) MLP and the
// input embedding scaled by sqrt(dim).
// Serves GGUF general.architecture "gemma2" (HF model_type "gemma2"). Variants: GQA, head_dim * heads
// != dim, tied or untied output. llama.cpp fixes the local/global period at 2 (layer 0 local); a
// file's attention.sliding_window_pattern, if present, is honoured. Norm weights in GGUF are the
// multiplier itself (the converter already added HF's +1).
#include <fmt/format.h>

#include <cmath>

#include "models/blocks.h"
#include "models/gemma.h"
#include "models/hparam_reader.h"

namespace glass::models {
namespace {

constexpr const char* kArch = "gemma2";

struct Gemma2Config {
  GemmaShape shape;
  float attn_softcap = 0.0f;   // attn_logit_softcapping; 0: none
  float final_softcap = 0.0f;  // final_logit_softcapping; 0: none
};

Result<Gemma2Config> config_from_gguf(const formats::GgufFile& f, const WeightIndex& w) {
  HparamReader r(f, kArch);
  Gemma2Config c;
  c.shape = read_gemma_shape(r, w, /*default_period=*/2);
  c.shape.rope_base_local = c.shape.rope_base_global;  // one RoPE base for both kinds
  c.attn_softcap = r.optional_float("attn_logit_softcapping", 0.0f);
  c.final_softcap = r.optional_float("final_logit_softcapping", 0.0f);
  if (!(c.attn_softcap >= 0.0f) || !(c.final_softcap >= 0.0f))
    r.fail(fmt::format("{} and {} must be >= 0", r.key("attn_logit_softcapping"),
                       r.key("final_logit_softcapping")));
  if (auto st = r.status(); !st) return st.error();
  if (auto st = c.shape.validate(kArch); !st) return st.error();
  return c;
}

Result<graph::Graph> build(const Gemma2Config& c, const WeightIndex& w, const BuildOptions& opt) {
  using graph::Tensor;
  const GemmaShape& s = c.shape;
  graph::Builder b;
  const int64_t n_ctx = choose_context(opt, s.n_ctx_train);
  const Step step = declare_step(b, opt, n_ctx, s.local_window());
  const GemmaWeights gw = declare_gemma_weights(b, w, s, /*qk_norm=*/false);

  // Embedding scaled by sqrt(dim).
  Tensor x = (b.embedding(gw.token_embd, step.tokens) * b.scalar(std::sqrt(static_cast<float>(s.dim))))
                 .named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const GemmaLayer& l = gw.layers[static_cast<size_t>(i)];
    // Attention: local layers see only the last `sliding_window` positions; scores soft-capped.
    const Tensor h = b.rms_norm(x, l.attn_norm, s.rms_eps).named(layer + ".attn_norm");
    const Tensor q = b.rope(project_heads(b, h, l.wq, s.n_heads, s.head_dim), step.positions, s.rope(i))
                         .named(layer + ".q_rope");  // [T, n_heads, head_dim]
    const Tensor k = b.rope(project_heads(b, h, l.wk, s.n_kv_heads, s.head_dim), step.positions, s.rope(i))
                         .named(layer + ".k_rope");  // [T, n_kv_heads, head_dim]
    const Tensor v = project_heads(b, h, l.wv, s.n_kv_heads, s.head_dim).named(layer + ".v");
    const KvCache kv = write_kv(b, layer, {s.n_kv_heads, s.head_dim}, k, v, step, opt.kv_dtype, s.window(i));
    graph::AttentionAttrs attn{s.attn_scale(), {}, s.window(i), c.attn_softcap};
    const Tensor a = attend(b, layer, q, s.n_heads, s.head_dim, kv, step, attn, l.wo);
    x = (x + b.rms_norm(a, l.post_attn_norm, s.rms_eps).named(layer + ".post_attention_norm"))
            .named(layer + ".attn_residual");
    // GeGLU MLP between its pre- and post-norm.
    const Tensor f = geglu_ffn(b, layer, l.gate, l.up, l.down,
                               b.rms_norm(x, l.ffn_norm, s.rms_eps).named(layer + ".ffn_norm"));
    x = (x + b.rms_norm(f, l.post_ffn_norm, s.rms_eps).named(layer + ".post_ffw_norm")).named(layer + ".out");
  }
  Tensor logits =
      b.matmul(b.rms_norm(select_output_rows(b, step, x), gw.output_norm, s.rms_eps).named("output_norm"),
               gw.output)
          .named("output");
  if (c.final_softcap > 0.0f) logits = b.softcap(logits, c.final_softcap).named("final_softcap");
  b.output("logits", logits.named("logits"));  // [O, vocab_size]
  return b.finish();
}

}  // namespace

Result<ModelGraph> gemma2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build(*c, weights, opt);
  if (!g) return g.error();
  return finish_model_graph(std::move(*g), c->shape.vocab_size, c->shape.n_ctx_train, c->shape.n_layers, opt,
                            fmt::format("{}: {}, attn softcap {:g}, final softcap {:g}", kArch,
                                        c->shape.summary(), c->attn_softcap, c->final_softcap),
                            c->shape.local_window());
}

}  // namespace glass::models
