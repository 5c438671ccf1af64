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

}  // namespace

Result<ModelGraph> gemma2_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_gemma(c->shape, {.attn_softcap = c->attn_softcap, .final_softcap = c->final_softcap},
                       weights, opt);
  if (!g) return g.error();
  return finish_model_graph(std::move(*g), c->shape.vocab_size, c->shape.n_ctx_train, c->shape.n_layers, opt,
                            fmt::format("{}: {}, attn softcap {:g}, final softcap {:g}", kArch,
                                        c->shape.summary(), c->attn_softcap, c->final_softcap),
                            c->shape.local_window());
}

}  // namespace glass::models
