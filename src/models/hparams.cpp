#include "models/hparams.h"

#include <fmt/format.h>

#include "models/blocks.h"

namespace glass::models {

namespace {

void validate(HparamReader& hp, const DecoderConfig& c, bool read_ffn) {
  if (c.n_layers <= 0 || c.dim <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 ||
      (read_ffn && c.ffn_dim <= 0))
    hp.fail(fmt::format("{}, {}, {}, {}, {}{} must be positive", hp.key("block_count"),
                        hp.key("embedding_length"), hp.key("attention.head_count"),
                        hp.key("attention.head_count_kv"), hp.key("attention.key_length"),
                        read_ffn ? " and " + hp.key("feed_forward_length") : ""));
  else if (c.n_heads % c.n_kv_heads != 0)
    hp.fail(fmt::format("{} = {} is not a multiple of {} = {}", hp.key("attention.head_count"), c.n_heads,
                        hp.key("attention.head_count_kv"), c.n_kv_heads));
  else if (c.n_rot <= 0 || c.n_rot % 2 != 0 || c.n_rot > c.head_dim)
    hp.fail(fmt::format("{} = {} must be even and at most head_dim {}", hp.key("rope.dimension_count"),
                        c.n_rot, c.head_dim));
  else if (!(c.rms_eps > 0.0f) || !(c.rope_freq_base > 0.0f) || !(c.rope_freq_scale > 0.0f))
    hp.fail(fmt::format("{}, {} and the rope scaling factor must be positive",
                        hp.key("attention.layer_norm_rms_epsilon"), hp.key("rope.freq_base")));
  else if (c.n_ctx_train <= 0)
    hp.fail(fmt::format("{} must be positive", hp.key("context_length")));
  else if (c.vocab_size <= 0)
    hp.fail(fmt::format("{} must be positive", hp.key("vocab_size")));
}

}  // namespace

Result<DecoderConfig> read_decoder_config(HparamReader& hp, const WeightIndex& weights, bool read_ffn,
                                          std::vector<int64_t>* kv_heads_per_layer) {
  DecoderConfig c;
  c.arch = hp.arch();
  c.n_layers = hp.required_int("block_count");
  c.dim = hp.required_int("embedding_length");
  c.n_heads = hp.required_int("attention.head_count");
  c.n_ctx_train = hp.required_int("context_length");
  if (read_ffn) c.ffn_dim = hp.required_int("feed_forward_length");
  if (kv_heads_per_layer != nullptr) {
    *kv_heads_per_layer = hp.per_layer_int("attention.head_count_kv", c.n_layers);
    c.n_kv_heads = 0;
    for (int64_t h : *kv_heads_per_layer) {
      if (h < 0 || (h > 0 && c.n_kv_heads > 0 && h != c.n_kv_heads))
        hp.fail(fmt::format("{}: every attention layer must have the same positive count, got {} and {}",
                            hp.key("attention.head_count_kv"), c.n_kv_heads, h));
      if (h > 0) c.n_kv_heads = h;
    }
    if (c.n_kv_heads == 0) c.n_kv_heads = c.n_heads;  // no attention layer: nothing reads it
  } else {
    c.n_kv_heads = hp.optional_int("attention.head_count_kv", c.n_heads);
  }
  if (!hp.has("attention.key_length") && (c.n_heads <= 0 || c.dim % c.n_heads != 0))
    hp.fail(fmt::format("{} = {} is not divisible by {} = {} (and {} is absent)", hp.key("embedding_length"),
                        c.dim, hp.key("attention.head_count"), c.n_heads, hp.key("attention.key_length")));
  c.head_dim = hp.optional_int("attention.key_length", c.n_heads > 0 ? c.dim / c.n_heads : 0);
  const int64_t value_length = hp.optional_int("attention.value_length", c.head_dim);
  c.n_rot = hp.optional_int("rope.dimension_count", c.head_dim);
  c.rms_eps = hp.required_float("attention.layer_norm_rms_epsilon");
  c.rope_freq_base = hp.optional_float("rope.freq_base", 10000.0f);
  const std::string scaling = hp.optional_string("rope.scaling.type", "none");
  if (scaling == "linear") {
    const float factor = hp.required_float("rope.scaling.factor");
    if (!(factor > 0.0f)) hp.fail(hp.key("rope.scaling.factor") + " must be positive");
    c.rope_freq_scale = factor > 0.0f ? 1.0f / factor : 1.0f;
  }
  c.vocab_size = hp.optional_int("vocab_size", hp.tensor_rows(weights, "token_embd.weight"));
  if (auto st = hp.status(); !st) return st.error();
  if (value_length != c.head_dim)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {} differs from {} = {}", hp.arch(),
                                                          hp.key("attention.value_length"), value_length,
                                                          hp.key("attention.key_length"), c.head_dim));
  if (scaling != "linear" && scaling != "none")
    return make_error(ErrorCode::Unsupported,
                      fmt::format("{}: {} '{}' is not supported (supported: none, linear)", hp.arch(),
                                  hp.key("rope.scaling.type"), scaling));
  validate(hp, c, read_ffn);
  if (auto st = hp.status(); !st) return st.error();
  return c;
}

ModelGraph decoder_model_graph(graph::Graph g, const DecoderConfig& c, const BuildOptions& opt,
                               const std::string& extra_summary) {
  return finish_model_graph(
      std::move(g), c.vocab_size, c.n_ctx_train, c.n_layers, opt,
      fmt::format(
          "{}: {} layers, dim {}, {} heads ({} kv), head_dim {}{}, vocab {}, rope {} dims base {:g}{}",
          c.arch, c.n_layers, c.dim, c.n_heads, c.n_kv_heads, c.head_dim,
          c.ffn_dim > 0 ? fmt::format(", ffn {}", c.ffn_dim) : "", c.vocab_size, c.n_rot, c.rope_freq_base,
          extra_summary),
      /*window=*/0);
}

}  // namespace glass::models
