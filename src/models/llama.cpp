// Llama family (Touvron et al. 2023, "LLaMA" and "Llama 2"): pre-norm decoder with RMSNorm, rotary
// positions, grouped-query attention and a SwiGLU MLP.
// Serves GGUF general.architecture "llama" (HF model_type "llama", "mistral"): Llama 2/3, TinyLlama,
// SmolLM2, Mistral-style models. Variants: GQA (n_kv_heads < n_heads), linear RoPE scaling,
// Llama 3 frequency factors (rope_freqs.weight), tied embeddings (no output.weight).
#include "models/llama.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {
namespace {

// Tensor names, GGUF's canonical form. Shapes are [out, in] (row-major), in config terms.
std::string blk(int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); }

}  // namespace

Result<LlamaConfig> llama_config_from_gguf(const formats::GgufFile& f, const WeightIndex& weights,
                                           const char* arch) {
  HparamReader hp(f, arch);
  return read_decoder_config(hp, weights, /*read_ffn=*/true);
}

Result<graph::Graph> build_llama(const LlamaConfig& c, const WeightIndex& w, const BuildOptions& opt,
                                 const LlamaVariant& variant) {
  using graph::Tensor;
  graph::Builder b;
  const int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;

  // HF checkpoints keep q/k rows in rotate-half order (architecture.h, BuildOptions::hf_layout).
  const graph::RopeMode rope_mode = opt.hf_layout ? graph::RopeMode::NeoX : graph::RopeMode::Normal;
  const Step step = declare_step(b, opt);
  const Tensor token_embd = weight(b, w, "token_embd.weight", {c.vocab_size, c.dim});
  const Tensor output_norm = weight(b, w, "output_norm.weight", {c.dim});
  const Tensor output = optional_weight(b, w, "output.weight", {c.vocab_size, c.dim}).value_or(token_embd);
  AttentionShape attn{
      c.n_heads, c.n_kv_heads, c.head_dim,
      graph::RopeAttrs{static_cast<int>(c.n_rot), rope_mode, c.rope_freq_base, c.rope_freq_scale},
      optional_weight(b, w, "rope_freqs.weight", {c.n_rot / 2})};

  AttentionShape nope = attn;  // a NoPE layer's attention: no rotation (n_rot 0)
  nope.rope.n_rot = 0;
  nope.rope_freqs.reset();

  Tensor x = b.embedding(token_embd, step.tokens).named("token_embd");  // [T, dim]
  for (int64_t i = 0; i < c.n_layers; ++i) {
    const std::string layer = fmt::format("blk.{}", i);
    const bool rotates = variant.no_rope_period == 0 || (i + 1) % variant.no_rope_period != 0;
    const AttentionWeights aw{
        weight(b, w, blk(i, "attn_q"), {q_dim, c.dim}), weight(b, w, blk(i, "attn_k"), {kv_dim, c.dim}),
        weight(b, w, blk(i, "attn_v"), {kv_dim, c.dim}), weight(b, w, blk(i, "attn_output"), {c.dim, q_dim})};
    const Tensor attn_norm = weight(b, w, blk(i, "attn_norm"), {c.dim});
    const Tensor ffn_norm = weight(b, w, blk(i, "ffn_norm"), {c.dim});
    const Tensor gate = weight(b, w, blk(i, "ffn_gate"), {c.ffn_dim, c.dim});
    const Tensor up = weight(b, w, blk(i, "ffn_up"), {c.ffn_dim, c.dim});
    const Tensor down = weight(b, w, blk(i, "ffn_down"), {c.dim, c.ffn_dim});

    Tensor h = x + self_attention(b, layer, aw, rotates ? attn : nope,
                                  b.rms_norm(x, attn_norm, c.rms_eps).named(layer + ".attn_norm"), step,
                                  opt.kv_dtype);
    // Past the last attention every op is per token: only the tokens whose logits are wanted go on.
    if (i == c.n_layers - 1) h = select_output_rows(b, step, h);
    x = (h +
         swiglu_ffn(b, layer, gate, up, down, b.rms_norm(h, ffn_norm, c.rms_eps).named(layer + ".ffn_norm")))
            .named(layer + ".out");
  }
  const Tensor logits =
      b.matmul(b.rms_norm(x, output_norm, c.rms_eps).named("output_norm"), output).named("logits");
  b.output("logits", logits);  // [O, vocab_size]
  return b.finish();
}

Result<ModelGraph> llama_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                   const BuildOptions& opt) {
  auto c = llama_config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_llama(*c, weights, opt);
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), *c, opt, "");
}

}  // namespace glass::models
