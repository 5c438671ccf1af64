// Gemma 3n's hyper-parameters (metadata keys, with llama.cpp's hard-coded values as defaults) and
// its tensor table. See gemma3n.cpp for the model.
#include <fmt/format.h>

#include <algorithm>

#include "models/blocks.h"
#include "models/gemma3n.h"
#include "models/hparam_reader.h"

namespace glass::models {
namespace {

constexpr const char* kArch = "gemma3n";
constexpr int64_t kDefaultPeriod = 5;                       // 4 local layers, then 1 global
constexpr int64_t kDefaultKvLayers = 20;                    // llama.cpp: n_layer_kv_from_start
constexpr int64_t kDefaultSparseLayers = 10;                // llama.cpp: n_layer_sparsity
constexpr float kDefaultSparsityStd = 1.6448533535003662f;  // normal icdf(0.95)

}  // namespace

int64_t Gemma3nConfig::kv_source(int64_t layer) const {
  if (layer < n_kv_layers) return layer;
  const bool local = shape.local[static_cast<size_t>(layer)];
  for (int64_t j = n_kv_layers - 1; j >= 0; --j)
    if (shape.local[static_cast<size_t>(j)] == local) return j;
  return -1;
}

Result<Gemma3nConfig> gemma3n_config_from_gguf(const formats::GgufFile& f, const WeightIndex& w) {
  HparamReader r(f, kArch);
  Gemma3nConfig c;
  c.shape = read_gemma_shape(r, w, kDefaultPeriod);
  c.n_altup = r.optional_int("altup.num_inputs", c.n_altup);
  c.active = r.optional_int("altup.active_idx", c.active);
  c.ple_dim = r.optional_int("embedding_length_per_layer_input", c.ple_dim);
  c.final_softcap = r.optional_float("final_logit_softcapping", c.final_softcap);
  const int64_t n = c.shape.n_layers;
  c.n_kv_layers = r.has("attention.shared_kv_layers") ? n - r.required_int("attention.shared_kv_layers")
                                                      : std::min(n, kDefaultKvLayers);
  if (r.has("activation_sparsity_scale")) {
    auto v = f.get_f32_array(r.key("activation_sparsity_scale"));
    if (!v || static_cast<int64_t>(v->size()) != n)
      r.fail(fmt::format("key '{}' must be an array of {} numbers", r.key("activation_sparsity_scale"), n));
    else
      c.sparsity = *v;
  } else {
    for (int64_t i = 0; i < n; ++i)
      c.sparsity.push_back(i < kDefaultSparseLayers ? kDefaultSparsityStd : 0.0f);
  }
  const auto laurel = w.find("blk.0.laurel_l.weight");
  c.laurel_rank = laurel != w.end() && laurel->second.shape.size() == 2 ? laurel->second.shape[0] : 0;
  if (auto st = r.status(); !st) return st.error();
  if (auto st = c.shape.validate(kArch); !st) return st.error();
  auto bad = [](const std::string& what) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", kArch, what));
  };
  if (c.n_altup < 2) return bad(fmt::format("{}.altup.num_inputs = {} must be at least 2", kArch, c.n_altup));
  if (c.active != 0)
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("{}: {}.altup.active_idx = {} (only stream 0 is supported)", kArch, kArch, c.active));
  if (c.ple_dim <= 0) return bad(fmt::format("{}.embedding_length_per_layer_input must be positive", kArch));
  if (c.laurel_rank <= 0) return bad("tensor 'blk.0.laurel_l.weight' is missing or not 2-D");
  if (c.n_kv_layers <= 0 || c.n_kv_layers > n)
    return bad(fmt::format("{}.attention.shared_kv_layers leaves {} cache-owning layers of {}", kArch,
                           c.n_kv_layers, n));
  for (int64_t i = 0; i < n; ++i)
    if (c.kv_source(i) < 0)
      return bad(fmt::format("layer {} shares KV but no cache-owning layer has its kind", i));
  if (!(c.final_softcap >= 0.0f)) return bad(fmt::format("{}.final_logit_softcapping must be >= 0", kArch));
  return c;
}

Gemma3nWeights declare_gemma3n_weights(graph::Builder& b, const WeightIndex& w, const Gemma3nConfig& c) {
  const GemmaShape& s = c.shape;
  auto blk = [](int64_t i, const char* what) { return fmt::format("blk.{}.{}.weight", i, what); };
  const GemmaWeights base = declare_gemma_weights(b, w, s, /*qk_norm=*/true);
  Gemma3nWeights g;
  g.token_embd = base.token_embd;
  g.output_norm = base.output_norm;
  g.output = base.output;
  const int64_t n = c.n_altup, ple_all = s.n_layers * c.ple_dim;
  g.per_layer_token_embd = weight(b, w, "per_layer_token_embd.weight", {s.vocab_size, ple_all});
  g.per_layer_model_proj = weight(b, w, "per_layer_model_proj.weight", {ple_all, s.dim});
  g.per_layer_proj_norm = weight(b, w, "per_layer_proj_norm.weight", {c.ple_dim});
  g.altup_proj = weight(b, w, "altup_proj.weight", {n - 1, s.dim, s.dim});
  g.altup_unembd_proj = weight(b, w, "altup_unembd_proj.weight", {n - 1, s.dim, s.dim});
  for (int64_t i = 0; i < s.n_layers; ++i) {
    Gemma3nLayer l;
    l.base = base.layers[static_cast<size_t>(i)];
    l.laurel_l = weight(b, w, blk(i, "laurel_l"), {c.laurel_rank, s.dim});
    l.laurel_r = weight(b, w, blk(i, "laurel_r"), {s.dim, c.laurel_rank});
    l.laurel_post_norm = weight(b, w, blk(i, "laurel_post_norm"), {s.dim});
    l.altup_router = weight(b, w, blk(i, "altup_router"), {n, s.dim});
    l.altup_router_norm = weight(b, w, blk(i, "altup_router_norm"), {s.dim});
    l.altup_predict_coef = weight(b, w, blk(i, "altup_predict_coef"), {n * n, n});
    l.altup_correct_coef = weight(b, w, blk(i, "altup_correct_coef"), {n, n});
    l.altup_correct_scale = weight(b, w, blk(i, "altup_correct_scale"), {s.dim});
    l.inp_gate = weight(b, w, blk(i, "inp_gate"), {c.ple_dim, s.dim});
    l.proj = weight(b, w, blk(i, "proj"), {s.dim, c.ple_dim});
    l.post_norm = weight(b, w, blk(i, "post_norm"), {s.dim});
    g.layers.push_back(l);
  }
  return g;
}

Result<ModelGraph> gemma3n_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                     const BuildOptions& opt) {
  auto c = gemma3n_config_from_gguf(file, weights);
  if (!c) return c.error();
  auto g = build_gemma3n(*c, weights, opt);
  if (!g) return g.error();
  return finish_model_graph(std::move(*g), c->shape.vocab_size, c->shape.n_ctx_train, c->shape.n_layers, opt,
                            fmt::format("{}: {}, {} AltUp streams, LAuReL rank {}, per-layer inputs {}, {} "
                                        "cache-owning layers, final softcap {:g}",
                                        kArch, c->shape.summary(), c->n_altup, c->laurel_rank, c->ple_dim,
                                        c->n_kv_layers, c->final_softcap),
                            c->shape.local_window());
}

}  // namespace glass::models
