#include "models/hparams.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {

Result<int64_t> Hparams::count(std::string_view k) const {
  auto v = file_.get_u32(key(k));
  if (!v) return v.error();
  return static_cast<int64_t>(*v);
}

Result<int64_t> Hparams::count_or(std::string_view k, int64_t fallback) const {
  return has(k) ? count(k) : Result<int64_t>(fallback);
}

Result<float> Hparams::real(std::string_view k) const { return file_.get_f32(key(k)); }

Result<float> Hparams::real_or(std::string_view k, float fallback) const {
  return has(k) ? real(k) : Result<float>(fallback);
}

Result<bool> Hparams::flag_or(std::string_view k, bool fallback) const {
  return has(k) ? file_.get_bool(key(k)) : Result<bool>(fallback);
}

namespace {

Error invalid(const Hparams& hp, const std::string& what) {
  return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}", hp.arch(), what));
}

Status validate(const Hparams& hp, const DecoderConfig& c) {
  if (c.n_layers <= 0 || c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0)
    return invalid(hp, fmt::format("{}, {}, {}, {} and {} must be positive", hp.key("block_count"),
                                   hp.key("embedding_length"), hp.key("attention.head_count"),
                                   hp.key("attention.head_count_kv"), hp.key("attention.key_length")));
  if (c.n_heads % c.n_kv_heads != 0)
    return invalid(hp, fmt::format("{} = {} is not a multiple of {} = {}", hp.key("attention.head_count"),
                                   c.n_heads, hp.key("attention.head_count_kv"), c.n_kv_heads));
  if (c.n_rot <= 0 || c.n_rot % 2 != 0 || c.n_rot > c.head_dim)
    return invalid(hp, fmt::format("{} = {} must be even and at most head_dim {}",
                                   hp.key("rope.dimension_count"), c.n_rot, c.head_dim));
  if (!(c.rms_eps > 0.0f) || !(c.rope_freq_base > 0.0f) || !(c.rope_freq_scale > 0.0f))
    return invalid(hp, fmt::format("{}, {} and the rope scaling factor must be positive",
                                   hp.key("attention.layer_norm_rms_epsilon"), hp.key("rope.freq_base")));
  if (c.n_ctx_train <= 0) return invalid(hp, fmt::format("{} must be positive", hp.key("context_length")));
  if (c.vocab_size <= 0) return invalid(hp, fmt::format("{} must be positive", hp.key("vocab_size")));
  return {};
}

}  // namespace

Result<DecoderConfig> read_decoder_config(const Hparams& hp, const WeightIndex& weights, bool read_ffn) {
  DecoderConfig c;
  c.arch = hp.arch();
  struct Field {
    int64_t* field;
    const char* key;
  };
  for (const Field& f :
       {Field{&c.n_layers, "block_count"}, Field{&c.dim, "embedding_length"},
        Field{&c.n_heads, "attention.head_count"}, Field{&c.n_ctx_train, "context_length"}}) {
    auto v = hp.count(f.key);
    if (!v) return v.error();
    *f.field = *v;
  }
  if (read_ffn) {
    auto ffn = hp.count("feed_forward_length");
    if (!ffn) return ffn.error();
    c.ffn_dim = *ffn;
  }
  auto kv = hp.count_or("attention.head_count_kv", c.n_heads);
  if (!kv) return kv.error();
  c.n_kv_heads = *kv;
  if (c.n_heads <= 0 || (!hp.has("attention.key_length") && c.dim % c.n_heads != 0))
    return invalid(
        hp, fmt::format("{} = {} is not divisible by {} = {} (and {} is absent)", hp.key("embedding_length"),
                        c.dim, hp.key("attention.head_count"), c.n_heads, hp.key("attention.key_length")));
  auto hd = hp.count_or("attention.key_length", c.dim / c.n_heads);
  if (!hd) return hd.error();
  c.head_dim = *hd;
  auto vd = hp.count_or("attention.value_length", c.head_dim);
  if (!vd) return vd.error();
  if (*vd != c.head_dim)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {} differs from {} = {}", hp.arch(),
                                                          hp.key("attention.value_length"), *vd,
                                                          hp.key("attention.key_length"), c.head_dim));
  auto rot = hp.count_or("rope.dimension_count", c.head_dim);
  if (!rot) return rot.error();
  c.n_rot = *rot;
  auto eps = hp.real("attention.layer_norm_rms_epsilon");
  if (!eps) return eps.error();
  c.rms_eps = *eps;
  auto base = hp.real_or("rope.freq_base", 10000.0f);
  if (!base) return base.error();
  c.rope_freq_base = *base;
  if (hp.has("rope.scaling.type")) {
    auto type = hp.file().get_string(hp.key("rope.scaling.type"));
    if (!type) return type.error();
    if (*type == "linear") {
      auto factor = hp.real("rope.scaling.factor");
      if (!factor) return factor.error();
      if (!(*factor > 0.0f)) return invalid(hp, hp.key("rope.scaling.factor") + " must be positive");
      c.rope_freq_scale = 1.0f / *factor;
    } else if (*type != "none") {
      return make_error(ErrorCode::Unsupported,
                        fmt::format("{}: {} '{}' is not supported (supported: none, linear)", hp.arch(),
                                    hp.key("rope.scaling.type"), *type));
    }
  }
  const auto embd = weights.find("token_embd.weight");
  if (embd == weights.end() || embd->second.shape.size() != 2)
    return invalid(hp, "tensor 'token_embd.weight' is missing or not 2-D");
  auto vocab = hp.count_or("vocab_size", embd->second.shape[0]);
  if (!vocab) return vocab.error();
  c.vocab_size = *vocab;
  if (auto st = validate(hp, c); !st) return st.error();
  return c;
}

ModelGraph decoder_model_graph(graph::Graph g, const DecoderConfig& c, const BuildOptions& opt,
                               const std::string& extra_summary) {
  ModelGraph m;
  m.graph = std::move(g);
  m.vocab_size = c.vocab_size;
  m.n_ctx_train = c.n_ctx_train;
  m.n_ctx = choose_context(opt, c.n_ctx_train);
  m.cache = cache_geometry(opt, m.n_ctx);
  m.n_layers = c.n_layers;
  index_states(m);
  m.summary =
      fmt::format("{}: {} layers, dim {}, {} heads ({} kv), head_dim {}, vocab {}, rope {} dims base {:g}{}",
                  c.arch, c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim, c.vocab_size, c.n_rot,
                  c.rope_freq_base, extra_summary);
  return m;
}

}  // namespace glass::models
