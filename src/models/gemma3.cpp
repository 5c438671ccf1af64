// Gemma 3 (Gemma Team 2025, "Gemma 3 Technical Report"): Gemma 2's pre- and post-norm decoder with
// local sliding-window layers interleaved with global ones (5 local : 1 global in the released
// models), each kind with its own RoPE base (10k local, 1M global), RMS-normalised queries and
// keys per head (replacing Gemma 2's attention soft-capping), a GeGLU MLP and the embedding scaled
// by sqrt(dim).
// Serves GGUF general.architecture "gemma3" (HF model_type "gemma3", "gemma3_text"), text path.
// The layer pattern comes from attention.sliding_window_pattern (layer i is local iff
// i % n < n - 1); converted files carry no such key and then get llama.cpp's period 6. Linear RoPE
// scaling applies to global layers only. A final logit softcap is applied when the file names one.
#include <fmt/format.h>

#include <cmath>

#include "models/blocks.h"
#include "models/gemma.h"
#include "models/hparam_reader.h"

namespace glass::models {
namespace {

constexpr const char* kArch = "gemma3";
constexpr int64_t kDefaultPeriod = 6;  // 5 local layers, then 1 global

struct Gemma3Config {
  GemmaShape shape;
  float final_softcap = 0.0f;  // final_logit_softcapping; 0: none
};

Result<Gemma3Config> config_from_gguf(const formats::GgufFile& f, const WeightIndex& w) {
  HparamReader r(f, kArch);
  Gemma3Config c;
  c.shape = read_gemma_shape(r, w, kDefaultPeriod);
  c.final_softcap = r.optional_float("final_logit_softcapping", 0.0f);
  if (!(c.final_softcap >= 0.0f)) r.fail(fmt::format("{} must be >= 0", r.key("final_logit_softcapping")));
  if (auto st = r.status(); !st) return st.error();
  if (auto st = c.shape.validate(kArch); !st) return st.error();
  return c;
}

Result<graph::Graph> build(const Gemma3Config& c, const WeightIndex& w, const BuildOptions& opt) {
  using graph::Tensor;
  const GemmaShape& s = c.shape;
  graph::Builder b;
  const int64_t n_ctx = choose_context(opt, s.n_ctx_train);
  const Step step = declare_step(b, opt, n_ctx, s.local_window());
  const GemmaWeights gw = declare_gemma_weights(b, w, s, /*qk_norm=*/true);

  // Embedding scaled by sqrt(dim).
  Tensor x = (b.embedding(gw.token_embd, step.tokens) * b.scalar(std::sqrt(static_cast<float>(s.dim))))
                 .named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const GemmaLayer& l = gw.layers[static_cast<size_t>(i)];
    // Attention: q and k RMS-normalised per head, then rotated with the layer kind's RoPE base;
    // local layers see only the last `sliding_window` positions.
    const Tensor h = b.rms_norm(x, l.attn_norm, s.rms_eps).named(layer + ".attn_norm");
    Tensor q = b.rms_norm(project_heads(b, h, l.wq, s.n_heads, s.head_dim), l.q_norm, s.rms_eps)
                   .named(layer + ".q_norm");  // [T, n_heads, head_dim]
    Tensor k = b.rms_norm(project_heads(b, h, l.wk, s.n_kv_heads, s.head_dim), l.k_norm, s.rms_eps)
                   .named(layer + ".k_norm");  // [T, n_kv_heads, head_dim]
    q = b.rope(q, step.positions, s.rope(i)).named(layer + ".q_rope");
    k = b.rope(k, step.positions, s.rope(i)).named(layer + ".k_rope");
    const Tensor v = project_heads(b, h, l.wv, s.n_kv_heads, s.head_dim).named(layer + ".v");
    const KvCache kv = write_kv(b, layer, {s.n_kv_heads, s.head_dim}, k, v, step, opt.kv_dtype, s.window(i));
    const graph::AttentionAttrs attn{s.attn_scale(), {}, s.window(i)};
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

Result<ModelGraph> gemma3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build(*c, weights, opt);
  if (!g) return g.error();
  return finish_model_graph(
      std::move(*g), c->shape.vocab_size, c->shape.n_ctx_train, c->shape.n_layers, opt,
      fmt::format("{}: {}, final softcap {:g}", kArch, c->shape.summary(), c->final_softcap),
      c->shape.local_window());
}

}  // namespace glass::models
