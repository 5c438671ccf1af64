// Gemma 4 (text) from HF checkpoints (models/hf_families.h), reading config.json as llama.cpp's
// converter does (conversion/gemma.py, Gemma4Model): head_dim for the local layers and
// global_head_dim for the global ones, num_key_value_heads / num_global_key_value_heads, layer_types,
// num_kv_shared_layers, hidden_size_per_layer_input, use_double_wide_mlp (the KV-sharing layers'
// MLPs twice intermediate_size), rope_parameters per layer kind (the global kind's "proportional"
// RoPE with its partial_rotary_factor becomes the rope_freqs tensor the converter writes), and the
// experts of the 26B-A4B. Norms hold the multiplier itself in both formats. Multimodal checkpoints
// keep the text model in text_config and under model.language_model.; the towers are skipped.
#include <fmt/format.h>

#include <cmath>

#include "models/hf_families.h"
#include "models/hf_keys.h"

namespace glass::models {
namespace {

constexpr auto kOptional = HfRole::Optional;

constexpr HfTensorName kGemma4Tensors[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.norm.weight", "output_norm.weight", HfRole::Required},
    {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight", kOptional},
    {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight", kOptional},
    {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight", kOptional},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Required},
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight", HfRole::Required},
    // The KV-sharing layers may leave out k and v; a layer without v_proj uses its keys as values.
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", kOptional},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight", kOptional},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", kOptional},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight", HfRole::Required},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight",
     HfRole::Required},
    {"model.layers.{}.pre_feedforward_layernorm.weight", "blk.{}.ffn_norm.weight", HfRole::Required},
    {"model.layers.{}.post_feedforward_layernorm.weight", "blk.{}.post_ffw_norm.weight", HfRole::Required},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
    {"model.layers.{}.per_layer_input_gate.weight", "blk.{}.inp_gate.weight", kOptional},
    {"model.layers.{}.per_layer_projection.weight", "blk.{}.proj.weight", kOptional},
    {"model.layers.{}.post_per_layer_input_norm.weight", "blk.{}.post_norm.weight", kOptional},
    {"model.layers.{}.layer_scalar", "blk.{}.layer_output_scale.weight", kOptional},
    // 26B-A4B: the router (its projection, input scale and per-expert output scale) and the
    // experts, [n_expert, 2 ffn, dim] and [n_expert, dim, ffn] as the converter keeps them.
    {"model.layers.{}.router.proj.weight", "blk.{}.ffn_gate_inp.weight", kOptional},
    {"model.layers.{}.router.scale", "blk.{}.ffn_gate_inp.scale", kOptional},
    {"model.layers.{}.router.per_expert_scale", "blk.{}.ffn_down_exps.scale", kOptional},
    {"model.layers.{}.experts.gate_up_proj", "blk.{}.ffn_gate_up_exps.weight", kOptional},
    {"model.layers.{}.experts.down_proj", "blk.{}.ffn_down_exps.weight", kOptional},
    {"model.layers.{}.pre_feedforward_layernorm_2.weight", "blk.{}.pre_ffw_norm_2.weight", kOptional},
    {"model.layers.{}.post_feedforward_layernorm_1.weight", "blk.{}.post_ffw_norm_1.weight", kOptional},
    {"model.layers.{}.post_feedforward_layernorm_2.weight", "blk.{}.post_ffw_norm_2.weight", kOptional},
};

// rope_parameters[kind] (transformers 5), or nothing.
Result<std::optional<formats::HfObject>> rope_of(const formats::HfObject& c, std::string_view kind) {
  auto params = c.object("rope_parameters");
  if (!params) return params.error();
  if (!*params) return std::optional<formats::HfObject>{};
  return (*params)->object(kind);
}

Status gemma4(const formats::HfConfig& config, HfNormalized& out) {
  auto text = hf_text_config(config);
  if (!text) return text.error();
  HfKeys k(*text, "gemma4", out.metadata);
  const formats::HfObject& c = k.config();
  formats::GgufMetadataBuilder& m = out.metadata;
  m.string("general.architecture", "gemma4");
  const char* act_key = c.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  if (auto st = k.require_one_of(act_key, "gelu_pytorch_tanh", {"gelu_pytorch_tanh", "gelu_tanh"},
                                 "the graph's GeGLU uses the tanh GELU");
      !st)
    return st;
  auto n = k.count("num_hidden_layers", "block_count");
  if (!n) return n.error();
  out.n_layers = *n;
  if (auto v = k.count("max_position_embeddings", "context_length", 131072); !v) return v.error();
  if (auto v = k.count("hidden_size", "embedding_length"); !v) return v.error();
  if (auto v = k.count("num_attention_heads", "attention.head_count"); !v) return v.error();
  if (auto v = k.positive("rms_norm_eps", "attention.layer_norm_rms_epsilon", 1e-6); !v) return v.error();
  if (auto v = k.count("sliding_window", "attention.sliding_window"); !v) return v.error();
  if (auto v = k.optional_cap("final_logit_softcapping", "final_logit_softcapping"); !v) return v.error();

  auto local = hf_sliding_layers(c, *n, "sliding_window_pattern", 5);
  if (!local) return local.error();
  m.bool_array("gemma4.attention.sliding_window_pattern", *local);  // as the converter writes it
  auto shared = c.get_int("num_kv_shared_layers", 0);
  if (!shared) return shared.error();
  if (*shared < 0 || *shared >= *n)
    return c.error("num_kv_shared_layers", fmt::format("{} must be in [0, num_hidden_layers)", *shared));
  m.u32("gemma4.attention.shared_kv_layers", static_cast<uint32_t>(*shared));
  auto ple = c.get_int("hidden_size_per_layer_input", 0);
  if (!ple) return ple.error();
  if (*ple < 0 || *ple > INT32_MAX) return c.error("hidden_size_per_layer_input", "must be >= 0");
  m.u32("gemma4.embedding_length_per_layer_input", static_cast<uint32_t>(*ple));

  // Head sizes and KV heads per layer kind.
  auto head_swa = k.count("head_dim", "attention.key_length_swa", 256);
  if (!head_swa) return head_swa.error();
  auto head_full = k.count("global_head_dim", "attention.key_length", *head_swa);
  if (!head_full) return head_full.error();
  m.u32("gemma4.attention.value_length", static_cast<uint32_t>(*head_full));
  m.u32("gemma4.attention.value_length_swa", static_cast<uint32_t>(*head_swa));
  auto kv_swa = c.get_int("num_key_value_heads");
  if (!kv_swa) return kv_swa.error();
  auto kv_full = c.get_int("num_global_key_value_heads", *kv_swa);
  if (!kv_full) return kv_full.error();
  if (*kv_swa <= 0 || *kv_full <= 0 || *kv_swa > INT32_MAX || *kv_full > INT32_MAX)
    return c.error("num_key_value_heads",
                   "num_key_value_heads and num_global_key_value_heads must be positive");
  std::vector<int32_t> kv, ffn;
  auto width = c.get_int("intermediate_size");
  if (!width) return width.error();
  auto double_wide = c.get_bool("use_double_wide_mlp", false);
  if (!double_wide) return double_wide.error();
  if (*width <= 0 || *width > INT32_MAX / 2)
    return c.error("intermediate_size", "must be a positive integer");
  for (int64_t i = 0; i < *n; ++i) {
    kv.push_back(static_cast<int32_t>((*local)[static_cast<size_t>(i)] ? *kv_swa : *kv_full));
    ffn.push_back(static_cast<int32_t>(*double_wide && i >= *n - *shared ? 2 * *width : *width));
  }
  // Per layer where they differ by layer, as the converter writes them (one value otherwise).
  if (c.has("num_global_key_value_heads"))
    m.i32_array("gemma4.attention.head_count_kv", kv);
  else
    m.u32("gemma4.attention.head_count_kv", static_cast<uint32_t>(*kv_swa));
  if (*double_wide)
    m.i32_array("gemma4.feed_forward_length", ffn);
  else
    m.u32("gemma4.feed_forward_length", static_cast<uint32_t>(*width));

  // RoPE: the global kind's proportional RoPE rotates the first partial_rotary_factor of each head's
  // pairs at the whole head's frequencies, which rope_freqs writes as divisors 1 (rotating) and
  // 1e30 (still); the local kind rotates head_dim x its own factor.
  auto full = rope_of(c, "full_attention");
  if (!full) return full.error();
  auto swa = rope_of(c, "sliding_attention");
  if (!swa) return swa.error();
  auto base_full = hf_rope_theta(c, "rope_theta", "full_attention", 1e6);
  if (!base_full) return base_full.error();
  auto base_swa = hf_rope_theta(c, "rope_local_base_freq", "sliding_attention", 10000.0);
  if (!base_swa) return base_swa.error();
  m.f32("gemma4.rope.freq_base", static_cast<float>(*base_full));
  m.f32("gemma4.rope.freq_base_swa", static_cast<float>(*base_swa));
  double factor_full = 1.0, factor_swa = 1.0;
  if (*full) {
    auto type = hf_rope_type(**full);
    if (!type) return type.error();
    if (*type != "proportional" && *type != "default")
      return k.unsupported("rope_parameters.full_attention.rope_type", *type);
    auto f = (*full)->get_float("partial_rotary_factor", 1.0);
    if (!f) return f.error();
    factor_full = *f;
  }
  if (*swa) {
    auto f = (*swa)->get_float("partial_rotary_factor", 1.0);
    if (!f) return f.error();
    factor_swa = *f;
  }
  if (!(factor_full > 0.0 && factor_full <= 1.0) || !(factor_swa > 0.0 && factor_swa <= 1.0))
    return c.error("rope_parameters", "partial_rotary_factor must be in (0, 1]");
  m.u32("gemma4.rope.dimension_count", static_cast<uint32_t>(*head_full));
  m.u32("gemma4.rope.dimension_count_swa",
        static_cast<uint32_t>(static_cast<double>(*head_swa) * factor_swa));
  const auto pairs = static_cast<size_t>(*head_full / 2);
  const auto rotating = static_cast<size_t>(static_cast<double>(*head_full) * factor_full / 2.0);
  HfDerivedTensor freqs{"rope_freqs.weight", {static_cast<int64_t>(pairs)}, std::vector<float>(pairs, 1e30f)};
  std::fill(freqs.values.begin(), freqs.values.begin() + static_cast<std::ptrdiff_t>(rotating), 1.0f);
  out.derived.push_back(std::move(freqs));

  // The experts (26B-A4B).
  if (c.has("num_experts") || c.has("num_local_experts")) {
    const std::string_view experts = c.has("num_experts") ? "num_experts" : "num_local_experts";
    if (auto v = k.count(experts, "expert_count"); !v) return v.error();
    const std::string_view used = c.has("top_k_experts") ? "top_k_experts" : "num_experts_per_tok";
    if (auto v = k.count(used, "expert_used_count"); !v) return v.error();
    const std::string_view width_key =
        c.has("expert_intermediate_size") ? "expert_intermediate_size" : "moe_intermediate_size";
    if (auto v = k.count(width_key, "expert_feed_forward_length"); !v) return v.error();
  }
  auto vocab = k.count("vocab_size", "vocab_size");
  if (!vocab) return vocab.error();
  auto tied = c.get_bool("tie_word_embeddings", true);
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return {};
}

}  // namespace

const HfAdapter kGemma4Hf{gemma4, kGemma4Tensors, false, kGemmaRenames, kGemmaTowers};

}  // namespace glass::models
