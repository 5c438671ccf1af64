#include "models/hf_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace glass::models {

Result<int64_t> HfKeys::count(std::string_view hf, std::string_view gguf, std::optional<int64_t> fallback) {
  auto v = c_.get_int(hf, fallback);
  if (!v) return v.error();
  if (*v <= 0 || *v > std::numeric_limits<int32_t>::max())
    return c_.error(hf, fmt::format("{} must be positive and below 2^31", *v));
  if (!gguf.empty()) m_.u32(key(gguf), static_cast<uint32_t>(*v));
  return *v;
}

Result<double> HfKeys::positive(std::string_view hf, std::string_view gguf, std::optional<double> fallback) {
  auto v = c_.get_float(hf, fallback);
  if (!v) return v.error();
  if (!(*v > 0) || *v > std::numeric_limits<float>::max()) return c_.error(hf, "must be positive");
  if (!gguf.empty()) m_.f32(key(gguf), static_cast<float>(*v));
  return *v;
}

Result<std::optional<double>> HfKeys::optional_cap(std::string_view hf, std::string_view gguf) {
  if (!c_.has(hf)) return std::optional<double>();
  auto v = c_.get_float(hf);
  if (!v) return v.error();
  if (!(*v >= 0) || *v > std::numeric_limits<float>::max()) return c_.error(hf, "must be >= 0");
  m_.f32(key(gguf), static_cast<float>(*v));
  return std::optional<double>(*v);
}

Status HfKeys::require_one_of(std::string_view hf, std::string_view fallback,
                              std::initializer_list<std::string_view> allowed, std::string_view why) {
  auto v = c_.get_string(hf, std::string(fallback));
  if (!v) return v.error();
  if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end())
    return unsupported(hf, fmt::format("'{}' ({})", *v, why));
  return {};
}

Status HfKeys::require_bool(std::string_view hf, bool fallback, bool expected, std::string_view why) {
  auto v = c_.get_bool(hf, fallback);
  if (!v) return v.error();
  if (*v != expected) return unsupported(hf, fmt::format("{} ({})", *v ? "true" : "false", why));
  return {};
}

Error HfKeys::unsupported(std::string_view hf, std::string_view what) const {
  return make_error(ErrorCode::Unsupported, fmt::format("{}: {}: {}", c_.where(), hf, what));
}

Result<double> hf_rope_theta(const formats::HfObject& c, std::string_view hf, std::string_view kind,
                             double fallback) {
  if (c.has(hf)) return c.get_float(hf);
  auto params = c.object("rope_parameters");
  if (!params) return params.error();
  if (!*params) return fallback;
  if (!kind.empty()) {
    auto per_kind = (*params)->object(kind);
    if (!per_kind) return per_kind.error();
    if (*per_kind) return (*per_kind)->get_float("rope_theta", fallback);
  }
  return (*params)->get_float("rope_theta", fallback);
}

Result<std::string> hf_rope_type(const formats::HfObject& r) {
  if (r.has("rope_type")) return r.get_string("rope_type");
  return r.get_string("type", std::string("default"));
}

namespace {

// rope_scaling (transformers 4) or rope_parameters (5; per layer kind in Gemma 3's): linear
// scaling becomes rope.scaling.*; "default" nothing; anything else is refused.
Status rope_scaling(HfKeys& k) {
  const formats::HfObject& c = k.config();
  auto params = c.object("rope_parameters");
  if (!params) return params.error();
  auto scaling = c.object("rope_scaling");
  if (!scaling) return scaling.error();
  std::optional<formats::HfObject> r = *params ? *params : *scaling;
  if (r) {
    auto full = r->object("full_attention");
    if (!full) return full.error();
    if (*full) r = *full;
  }
  if (!r) return {};
  auto type = hf_rope_type(*r);
  if (!type) return type.error();
  if (*type == "default") return {};
  if (*type != "linear")
    return k.unsupported("rope_scaling", fmt::format("rope_type '{}' (supported: default, linear)", *type));
  auto factor = r->get_float("factor");
  if (!factor) return factor.error();
  if (!(*factor > 0)) return r->error("factor", "must be positive");
  k.metadata().string(k.key("rope.scaling.type"), "linear");
  k.metadata().f32(k.key("rope.scaling.factor"), static_cast<float>(*factor));
  return {};
}

}  // namespace

Result<HfDecoderShape> hf_decoder_keys(HfKeys& k, const HfDecoderDefaults& d) {
  const formats::HfObject& c = k.config();
  HfDecoderShape s;
  auto layers = k.count("num_hidden_layers", "block_count");
  if (!layers) return layers.error();
  s.n_layers = *layers;
  if (auto v = k.count("max_position_embeddings", "context_length", d.max_positions); !v) return v.error();
  auto dim = k.count("hidden_size", "embedding_length");
  if (!dim) return dim.error();
  s.dim = *dim;
  if (d.ffn)
    if (auto v = k.count("intermediate_size", "feed_forward_length"); !v) return v.error();
  auto heads = k.count("num_attention_heads", "attention.head_count");
  if (!heads) return heads.error();
  s.n_heads = *heads;
  auto kv = k.count("num_key_value_heads", "attention.head_count_kv", s.n_heads);
  if (!kv) return kv.error();
  s.n_kv_heads = *kv;
  if (auto v = k.positive("rms_norm_eps", "attention.layer_norm_rms_epsilon", d.rms_eps); !v)
    return v.error();
  if (c.has("head_dim") || d.head_dim) {
    auto hd = k.count("head_dim", "attention.key_length", d.head_dim);
    if (!hd) return hd.error();
    s.head_dim = *hd;
    k.metadata().u32(k.key("attention.value_length"), static_cast<uint32_t>(s.head_dim));
  } else {
    if (s.dim % s.n_heads != 0)
      return c.error("hidden_size",
                     fmt::format("{} is not divisible by num_attention_heads {}", s.dim, s.n_heads));
    s.head_dim = s.dim / s.n_heads;
  }
  auto theta = hf_rope_theta(c, "rope_theta", "full_attention", d.rope_theta);
  if (!theta) return theta.error();
  if (!(*theta > 0) || *theta > std::numeric_limits<float>::max())
    return c.error("rope_theta", "must be positive");
  k.metadata().f32(k.key("rope.freq_base"), static_cast<float>(*theta));
  if (auto st = rope_scaling(k); !st) return st.error();
  return s;
}

Result<std::vector<bool>> hf_sliding_layers(const formats::HfObject& c, int64_t n_layers,
                                            std::string_view pattern_key, int64_t default_period) {
  const auto n = static_cast<size_t>(n_layers);
  std::vector<bool> local(n, false);
  if (const formats::Json* types = c.find("layer_types"); types != nullptr) {
    if (!types->is_array() || types->size() != n)
      return c.error("layer_types", fmt::format("must be a list of {} layer types", n));
    for (size_t i = 0; i < n; ++i) {
      const formats::Json& t = (*types)[i];
      if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
        return make_error(
            ErrorCode::Unsupported,
            fmt::format("{}: layer_types[{}]: expected \"sliding_attention\" or \"full_attention\"",
                        c.where(), i));
      local[i] = t == "sliding_attention";
    }
    return local;
  }
  auto period = c.get_int(pattern_key, default_period);
  if (!period) return period.error();
  if (*period < 0) return c.error(pattern_key, "must be >= 0");
  for (size_t i = 0; i < n; ++i) local[i] = *period > 1 && static_cast<int64_t>(i) % *period < *period - 1;
  return local;
}

void put_sliding_pattern(HfKeys& k, const std::vector<bool>& local) {
  const auto n = static_cast<int64_t>(local.size());
  for (int64_t p = 1; p <= n; ++p) {
    bool fits = true;
    for (int64_t i = 0; i < n && fits; ++i) fits = local[static_cast<size_t>(i)] == (p > 1 && i % p < p - 1);
    if (fits) {
      k.metadata().u32(k.key("attention.sliding_window_pattern"), static_cast<uint32_t>(p));
      return;
    }
  }
  k.metadata().bool_array(k.key("attention.sliding_window_pattern"), local);
}

double normal_quantile(double p) {
  // Newton's method on the CDF 0.5 erfc(-x / sqrt 2), from 0; converges in a few steps for the
  // probabilities configs use (0.95).
  double x = 0.0;
  for (int i = 0; i < 100; ++i) {
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * 3.14159265358979323846);
    const double step = (cdf - p) / pdf;
    x -= step;
    if (std::abs(step) < 1e-15) break;
  }
  return x;
}

}  // namespace glass::models
