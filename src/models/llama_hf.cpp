// Llama from an HF checkpoint: config.json keys -> the llama.* GGUF keys llama.cpp reads (what
// llama.cpp's convert_hf_to_gguf.py writes), and HF tensor names -> GGUF names. The q/k rows stay
// as HF stores them (rotate-half RoPE order); the builder pairs dims accordingly
// (BuildOptions::hf_layout), so nothing is permuted or copied.
#include "models/llama_hf.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "models/hf_keys.h"

namespace glass::models {
namespace {

constexpr HfTensorName kTensors[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"model.norm.weight", "output_norm.weight", HfRole::Required},
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Required},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", HfRole::Required},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", HfRole::Required},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight", HfRole::Required},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight", HfRole::Required},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
    {"model.layers.{}.self_attn.rotary_emb.inv_freq", "", HfRole::Ignored},
};

// An integer config key that must be positive and fit a GGUF u32, written to `gguf`.
Status put_int(const formats::HfObject& c, std::string_view hf, std::string_view gguf,
               std::optional<int64_t> fallback, formats::GgufMetadataBuilder& m, int64_t* out = nullptr) {
  auto v = c.get_int(hf, fallback);
  if (!v) return v.error();
  if (*v <= 0 || *v > std::numeric_limits<int32_t>::max())
    return c.error(hf, fmt::format("{} must be positive and below 2^31", *v));
  m.u32(gguf, static_cast<uint32_t>(*v));
  if (out != nullptr) *out = *v;
  return {};
}

Status unsupported(const formats::HfObject& c, std::string_view key, std::string_view what) {
  return make_error(ErrorCode::Unsupported, fmt::format("{}: {}: {}", c.where(), key, what));
}

// rope_scaling (transformers <= 4.x) or rope_parameters (5.x, which also moves rope_theta there).
Status rope(const formats::HfObject& c, const std::string& arch, int64_t n_rot,
            formats::GgufMetadataBuilder& m, HfNormalized& out) {
  auto params = c.object("rope_parameters");
  if (!params) return params.error();
  auto scaling = c.object("rope_scaling");
  if (!scaling) return scaling.error();
  const std::optional<formats::HfObject> r = *params ? *params : *scaling;
  auto theta = c.get_float("rope_theta", 10000.0);
  if (!theta) return theta.error();
  if (r && r->has("rope_theta")) theta = r->get_float("rope_theta");
  if (!theta) return theta.error();
  if (!(*theta > 0)) return c.error("rope_theta", "must be positive");
  m.f32(arch + ".rope.freq_base", static_cast<float>(*theta));
  if (!r) return {};
  auto type = hf_rope_type(*r);
  if (!type) return type.error();
  if (*type == "default") return {};
  if (*type != "linear" && *type != "llama3")
    return unsupported(*r, "rope_type",
                       fmt::format("'{}' is not supported (supported: default, linear, llama3)", *type));
  auto factor = r->get_float("factor", *type == "llama3" ? std::optional<double>(8.0) : std::nullopt);
  if (!factor) return factor.error();
  if (!(*factor > 0)) return r->error("factor", "must be positive");
  if (*type == "linear") {
    m.string(arch + ".rope.scaling.type", "linear");
    m.f32(arch + ".rope.scaling.factor", static_cast<float>(*factor));
    return {};
  }
  // llama3: the frequency factors GGUF files carry as rope_freqs.weight.
  auto low = r->get_float("low_freq_factor", 1.0);
  if (!low) return low.error();
  auto high = r->get_float("high_freq_factor", 4.0);
  if (!high) return high.error();
  auto original = r->get_float("original_max_position_embeddings", 8192.0);
  if (!original) return original.error();
  if (!(*low > 0) || !(*high > *low) || !(*original > 0))
    return r->error("low_freq_factor",
                    "llama3 scaling needs 0 < low_freq_factor < high_freq_factor and a "
                    "positive original_max_position_embeddings");
  out.derived.push_back({"rope_freqs.weight",
                         {n_rot / 2},
                         llama3_rope_factors(n_rot, *theta, *factor, *low, *high, *original)});
  return {};
}

// config.json -> the `arch`.* keys of the Llama graph (llama.h).
Status normalize_llama_graph(const formats::HfConfig& config, HfNormalized& out, const std::string& arch) {
  const formats::HfObject c = config.config();
  formats::GgufMetadataBuilder& m = out.metadata;
  m.string("general.architecture", arch);
  const auto key = [&arch](const char* k) { return arch + "." + k; };

  // The math the llama graph implements: SiLU-gated MLP, no biases.
  auto act = c.get_string("hidden_act", std::string("silu"));
  if (!act) return act.error();
  if (*act != "silu") return unsupported(c, "hidden_act", fmt::format("'{}' (llama supports silu)", *act));
  for (const char* bias : {"attention_bias", "mlp_bias"}) {
    auto b = c.get_bool(bias, false);
    if (!b) return b.error();
    if (*b) return unsupported(c, bias, "true (llama has no bias terms)");
  }

  int64_t dim = 0, n_heads = 0, n_ctx = 0;
  if (auto s = put_int(c, "hidden_size", key("embedding_length"), std::nullopt, m, &dim); !s) return s;
  if (auto s = put_int(c, "intermediate_size", key("feed_forward_length"), std::nullopt, m); !s) return s;
  if (auto s = put_int(c, "num_hidden_layers", key("block_count"), std::nullopt, m, &out.n_layers); !s)
    return s;
  if (auto s = put_int(c, "num_attention_heads", key("attention.head_count"), std::nullopt, m, &n_heads); !s)
    return s;
  if (auto s = put_int(c, "num_key_value_heads", key("attention.head_count_kv"), n_heads, m); !s) return s;
  if (auto s = put_int(c, "vocab_size", key("vocab_size"), std::nullopt, m); !s) return s;
  if (dim % n_heads != 0 && !c.has("head_dim"))
    return c.error("hidden_size", fmt::format("{} is not divisible by num_attention_heads {}", dim, n_heads));
  int64_t head_dim = 0;
  if (auto s = put_int(c, "head_dim", key("attention.key_length"), dim / n_heads, m, &head_dim); !s) return s;
  m.u32(key("attention.value_length"), static_cast<uint32_t>(head_dim));

  // Mistral's sliding window: attention within the window is the full attention the graph
  // computes, so the training context is capped at the window (a longer -c goes beyond it).
  auto max_pos = c.get_int("max_position_embeddings", 2048);
  if (!max_pos) return max_pos.error();
  auto window = c.get_int("sliding_window", *max_pos);
  if (!window) return window.error();
  if (auto s = put_int(c, *window < *max_pos ? "sliding_window" : "max_position_embeddings",
                       key("context_length"), std::min(*window, *max_pos), m, &n_ctx);
      !s)
    return s;

  auto eps = c.get_float("rms_norm_eps", 1e-6);
  if (!eps) return eps.error();
  if (!(*eps > 0)) return c.error("rms_norm_eps", "must be positive");
  m.f32(key("attention.layer_norm_rms_epsilon"), static_cast<float>(*eps));

  auto partial = c.get_float("partial_rotary_factor", 1.0);
  if (!partial) return partial.error();
  const auto n_rot = static_cast<int64_t>(std::llround(static_cast<double>(head_dim) * *partial));
  if (n_rot <= 0 || n_rot > head_dim || n_rot % 2 != 0)
    return c.error("partial_rotary_factor",
                   fmt::format("gives {} rotated dims of head_dim {}", n_rot, head_dim));
  m.u32(key("rope.dimension_count"), static_cast<uint32_t>(n_rot));
  if (auto s = rope(c, arch, n_rot, m, out); !s) return s;

  auto tied = c.get_bool("tie_word_embeddings", false);  // LlamaConfig's default
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return {};
}

Status normalize_llama(const formats::HfConfig& config, HfNormalized& out) {
  return normalize_llama_graph(config, out, "llama");
}

// SmolLM3: its NoPE layers must be the every-fourth pattern llama.cpp fixes (smollm3.cpp).
Status normalize_smollm3(const formats::HfConfig& config, HfNormalized& out) {
  const formats::HfObject c = config.config();
  auto sliding = c.get_bool("use_sliding_window", false);
  if (!sliding) return sliding.error();
  if (*sliding) return unsupported(c, "use_sliding_window", "true (smollm3 attends to the whole context)");
  if (auto s = normalize_llama_graph(config, out, "smollm3"); !s) return s;
  auto interval = c.get_int("no_rope_layer_interval", 4);
  if (!interval) return interval.error();
  if (*interval != 4)
    return unsupported(c, "no_rope_layer_interval",
                       fmt::format("{} (llama.cpp's smollm3 fixes 4)", *interval));
  if (const formats::Json* layers = c.find("no_rope_layers"); layers != nullptr) {
    if (!layers->is_array() || static_cast<int64_t>(layers->size()) != out.n_layers)
      return c.error("no_rope_layers", fmt::format("must be a list of {} flags", out.n_layers));
    for (int64_t i = 0; i < out.n_layers; ++i) {
      const formats::Json& v = (*layers)[static_cast<size_t>(i)];
      const int64_t want = (i + 1) % 4 != 0 ? 1 : 0;  // 1: the layer uses RoPE
      if (!v.is_number_integer() || v.get<int64_t>() != want)
        return unsupported(
            c, "no_rope_layers",
            fmt::format("[{}] is {}, but a GGUF smollm3 rotates every layer but each 4th", i, v.dump()));
    }
  }
  return {};
}

}  // namespace

std::vector<float> llama3_rope_factors(int64_t n_rot, double base, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context) {
  // Meta's Llama 3.1 scaling: wavelengths shorter than original/high_freq_factor keep their
  // frequency, those longer than original/low_freq_factor are divided by `factor`, and the band
  // between interpolates smoothly. GGUF stores the divisor per pair.
  const double low_wavelen = original_context / low_freq_factor;
  const double high_wavelen = original_context / high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double divisor = 1.0;
    if (wavelen > low_wavelen) {
      divisor = factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

const HfAdapter kLlamaHf{normalize_llama, kTensors, /*gguf_permutes_qk=*/true};
const HfAdapter kSmolLm3Hf{normalize_smollm3, kTensors, /*gguf_permutes_qk=*/true};

}  // namespace glass::models
