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

}  // namespace

Result<ModelGraph> gemma3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                    const BuildOptions& opt) {
  auto c = config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_gemma(c->shape, {.qk_norm = true, .final_softcap = c->final_softcap}, weights, opt);
  if (!g) return g.error();
  return finish_model_graph(
      std::move(*g), c->shape.vocab_size, c->shape.n_ctx_train, c->shape.n_layers, opt,
      fmt::format("{}: {}, final softcap {:g}", kArch, c->shape.summary(), c->final_softcap),
      c->shape.local_window());
}

}  // namespace glass::models
