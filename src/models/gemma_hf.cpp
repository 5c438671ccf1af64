// Gemma 2, Gemma 3 and Gemma 3n (text) from HF checkpoints (models/hf_families.h). Gemma 2/3's
// RMSNorm computes x * (1 + w): their norm weights bind as 1 + w, which is what GGUF stores; Gemma
// 3n's norms hold the multiplier itself in both formats. RoPE rotates halves in both formats.
// Multimodal checkpoints (model_type "gemma3" / "gemma3n") keep the text model's config in
// text_config and its tensors under model.language_model.; the vision and audio towers are skipped.
#include <fmt/format.h>

#include "models/hf_families.h"
#include "models/hf_keys.h"

namespace glass::models {
namespace {

constexpr auto kAddOne = HfTransform::AddOne;

// The decoder layer Gemma 2 and 3 share; their norms are stored w - 1.
constexpr HfTensorName kGemmaBase[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Required},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", HfRole::Required},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", HfRole::Required},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight", HfRole::Required},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
};
constexpr HfTensorName kGemmaNorms[] = {
    {"model.norm.weight", "output_norm.weight", HfRole::Required, kAddOne},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required, kAddOne},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight", HfRole::Required,
     kAddOne},
    {"model.layers.{}.pre_feedforward_layernorm.weight", "blk.{}.ffn_norm.weight", HfRole::Required, kAddOne},
    {"model.layers.{}.post_feedforward_layernorm.weight", "blk.{}.post_ffw_norm.weight", HfRole::Required,
     kAddOne},
};
constexpr HfTensorName kGemma3QkNorm[] = {
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight", HfRole::Required, kAddOne},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight", HfRole::Required, kAddOne},
};
// Gemma 3n: the same layer with its norms as stored, plus AltUp, LAuReL and the per-layer inputs.
constexpr HfTensorName kGemma3nNorms[] = {
    {"model.norm.weight", "output_norm.weight", HfRole::Required},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight",
     HfRole::Required},
    {"model.layers.{}.pre_feedforward_layernorm.weight", "blk.{}.ffn_norm.weight", HfRole::Required},
    {"model.layers.{}.post_feedforward_layernorm.weight", "blk.{}.post_ffw_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight", HfRole::Required},
};
constexpr HfTensorName kGemma3nExtra[] = {
    {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight", HfRole::Required},
    {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight", HfRole::Required},
    {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight", HfRole::Required},
    {"model.altup_projections.{e}.weight", "altup_proj.weight", HfRole::Required},
    {"model.altup_unembed_projections.{e}.weight", "altup_unembd_proj.weight", HfRole::Required},
    {"model.layers.{}.altup.correct_output_scale", "blk.{}.altup_correct_scale.weight", HfRole::Required},
    {"model.layers.{}.altup.correction_coefs.weight", "blk.{}.altup_correct_coef.weight", HfRole::Required},
    {"model.layers.{}.altup.prediction_coefs.weight", "blk.{}.altup_predict_coef.weight", HfRole::Required},
    {"model.layers.{}.altup.modality_router.weight", "blk.{}.altup_router.weight", HfRole::Required},
    {"model.layers.{}.altup.router_norm.weight", "blk.{}.altup_router_norm.weight", HfRole::Required},
    {"model.layers.{}.laurel.linear_left.weight", "blk.{}.laurel_l.weight", HfRole::Required},
    {"model.layers.{}.laurel.linear_right.weight", "blk.{}.laurel_r.weight", HfRole::Required},
    {"model.layers.{}.laurel.post_laurel_norm.weight", "blk.{}.laurel_post_norm.weight", HfRole::Required},
    {"model.layers.{}.per_layer_input_gate.weight", "blk.{}.inp_gate.weight", HfRole::Required},
    {"model.layers.{}.per_layer_projection.weight", "blk.{}.proj.weight", HfRole::Required},
    {"model.layers.{}.post_per_layer_input_norm.weight", "blk.{}.post_norm.weight", HfRole::Required},
};

constexpr auto kGemma2Tensors = hf_rows(kGemmaBase, kGemmaNorms);
constexpr auto kGemma3Tensors = hf_rows(kGemmaBase, kGemmaNorms, kGemma3QkNorm);
constexpr auto kGemma3nTensors = hf_rows(kGemmaBase, kGemma3nNorms, kGemma3nExtra);

// Multimodal layouts: transformers 5 ("model.language_model.") and 4 ("language_model.model.").
}  // namespace

const HfRename kGemmaRenames[3] = {{"model.language_model.", "model."},
                                   {"language_model.model.", "model."},
                                   {"language_model.lm_head.", "lm_head."}};
const std::string_view kGemmaTowers[7] = {
    "model.vision_tower.",          "model.audio_tower.", "model.embed_vision.",   "model.embed_audio.",
    "model.multi_modal_projector.", "vision_tower.",      "multi_modal_projector."};

namespace {

const auto& kRenames = kGemmaRenames;
const auto& kTowers = kGemmaTowers;

// The keys all three read: the decoder's, GeGLU with tanh GELU, tied embeddings (Gemma's default),
// and queries scaled by 1 / sqrt(head_dim) (query_pre_attn_scalar = head_dim) where `scaled_queries`.
Result<HfDecoderShape> gemma_keys(HfKeys& k, HfNormalized& out, const HfDecoderDefaults& d,
                                  bool scaled_queries = true) {
  const formats::HfObject& c = k.config();
  const char* act_key = c.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  if (auto st = k.require_one_of(act_key, "gelu_pytorch_tanh", {"gelu_pytorch_tanh", "gelu_tanh"},
                                 "the graph's GeGLU uses the tanh GELU");
      !st)
    return st.error();
  auto s = hf_decoder_keys(k, d);
  if (!s) return s.error();
  out.n_layers = s->n_layers;
  if (scaled_queries && c.has("query_pre_attn_scalar")) {
    auto scalar = c.get_float("query_pre_attn_scalar");
    if (!scalar) return scalar.error();
    if (*scalar != static_cast<double>(s->head_dim))
      return k.unsupported(
          "query_pre_attn_scalar",
          fmt::format("{} (glass scales queries by 1/sqrt(head_dim {}))", *scalar, s->head_dim));
  }
  auto tied = c.get_bool("tie_word_embeddings", true);
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return s;
}

// Gemma 3 / 3n local layers' RoPE base (rope_local_base_freq; transformers 5: rope_parameters).
Status local_rope_base(HfKeys& k) {
  auto base = hf_rope_theta(k.config(), "rope_local_base_freq", "sliding_attention", 10000.0);
  if (!base) return base.error();
  if (!(*base > 0)) return k.config().error("rope_local_base_freq", "must be positive");
  k.metadata().f32(k.key("rope.freq_base_swa"), static_cast<float>(*base));
  return {};
}

Status window(HfKeys& k, int64_t fallback) {
  if (auto v = k.count("sliding_window", "attention.sliding_window", fallback); !v) return v.error();
  return {};
}

Status gemma2(const formats::HfConfig& config, HfNormalized& out) {
  auto text = hf_text_config(config);
  if (!text) return text.error();
  HfKeys k(*text, "gemma2", out.metadata);
  out.metadata.string("general.architecture", "gemma2");
  auto s = gemma_keys(k, out, {.max_positions = 8192, .rms_eps = 1e-6, .head_dim = 256});
  if (!s) return s.error();
  // Gemma2Config's defaults: attention scores capped at 50, final logits at 30.
  for (auto [hf, fallback] :
       {std::pair{"attn_logit_softcapping", 50.0}, std::pair{"final_logit_softcapping", 30.0}}) {
    const bool absent = k.config().find(hf) == nullptr;
    if (absent) {
      out.metadata.f32(k.key(hf), static_cast<float>(fallback));
      continue;
    }
    if (auto v = k.optional_cap(hf, hf); !v) return v.error();
  }
  if (auto st = window(k, 4096); !st) return st;
  // Local layers alternate with global ones from layer 0 (llama.cpp's fixed period 2).
  auto local = hf_sliding_layers(k.config(), s->n_layers, "sliding_window_pattern", 2);
  if (!local) return local.error();
  std::vector<bool> alternating(static_cast<size_t>(s->n_layers));
  for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2 == 0;
  if (*local != alternating) put_sliding_pattern(k, *local);
  return {};
}

Status gemma3(const formats::HfConfig& config, HfNormalized& out) {
  auto text = hf_text_config(config);
  if (!text) return text.error();
  HfKeys k(*text, "gemma3", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "gemma3");
  if (c.has("attn_logit_softcapping"))
    return k.unsupported("attn_logit_softcapping", "Gemma 3 has no attention-score softcap");
  auto s = gemma_keys(k, out, {.max_positions = 131072, .rms_eps = 1e-6, .head_dim = 256, .rope_theta = 1e6});
  if (!s) return s.error();
  if (auto st = local_rope_base(k); !st) return st;
  if (auto v = k.optional_cap("final_logit_softcapping", "final_logit_softcapping"); !v) return v.error();
  if (auto st = window(k, 4096); !st) return st;
  auto local = hf_sliding_layers(c, s->n_layers, "sliding_window_pattern", 6);
  if (!local) return local.error();
  put_sliding_pattern(k, *local);
  return {};
}

Status gemma3n(const formats::HfConfig& config, HfNormalized& out) {
  auto text = hf_text_config(config);
  if (!text) return text.error();
  HfKeys k(*text, "gemma3n", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "gemma3n");
  // intermediate_size is one width or one per layer.
  const formats::Json* ffn = c.find("intermediate_size");
  auto s = gemma_keys(k, out,
                      {.max_positions = 32768,
                       .rms_eps = 1e-6,
                       .head_dim = 256,
                       .rope_theta = 1e6,
                       .ffn = ffn == nullptr || !ffn->is_array()},
                      /*scaled_queries=*/false);  // Gemma 3n's attention scale is 1
  if (!s) return s.error();
  if (ffn != nullptr && ffn->is_array()) {
    std::vector<int32_t> widths;
    for (const formats::Json& w : *ffn) {
      if (!w.is_number_integer() || w.get<int64_t>() <= 0 || w.get<int64_t>() > INT32_MAX)
        return c.error("intermediate_size", "must be a positive integer or a list of them");
      widths.push_back(static_cast<int32_t>(w.get<int64_t>()));
    }
    out.metadata.i32_array("gemma3n.feed_forward_length", widths);
  }
  if (auto st = local_rope_base(k); !st) return st;
  if (c.has("final_logit_softcapping")) {
    if (auto v = k.optional_cap("final_logit_softcapping", "final_logit_softcapping"); !v) return v.error();
  } else {
    out.metadata.f32("gemma3n.final_logit_softcapping", 30.0f);
  }
  if (auto st = window(k, 512); !st) return st;
  auto local = hf_sliding_layers(c, s->n_layers, "sliding_window_pattern", 5);
  if (!local) return local.error();
  out.metadata.bool_array("gemma3n.attention.sliding_window_pattern", *local);  // as the converter writes it
  if (auto v = k.count("altup_num_inputs", "altup.num_inputs", 4); !v) return v.error();
  auto active = c.get_int("altup_active_idx", 0);
  if (!active) return active.error();
  if (*active != 0) return k.unsupported("altup_active_idx", fmt::format("{} (only stream 0)", *active));
  out.metadata.u32("gemma3n.altup.active_idx", 0);
  if (auto st = k.require_bool("altup_correct_scale", true, true, "the graph scales the corrected stream");
      !st)
    return st;
  if (auto v = k.count("hidden_size_per_layer_input", "embedding_length_per_layer_input", 256); !v)
    return v.error();
  auto shared = c.get_int("num_kv_shared_layers", 0);
  if (!shared) return shared.error();
  if (*shared < 0 || *shared >= s->n_layers)
    return c.error("num_kv_shared_layers", fmt::format("{} must be in [0, num_hidden_layers)", *shared));
  out.metadata.u32("gemma3n.attention.shared_kv_layers", static_cast<uint32_t>(*shared));
  auto vocab = c.get_int("vocab_size");
  if (!vocab) return vocab.error();
  auto ple_vocab = c.get_int("vocab_size_per_layer_input", *vocab);
  if (!ple_vocab) return ple_vocab.error();
  if (*ple_vocab != *vocab)
    return k.unsupported(
        "vocab_size_per_layer_input",
        fmt::format("{} differs from vocab_size {} (per-layer embeddings for every token are needed)",
                    *ple_vocab, *vocab));
  // Activation sparsity: a keep-probability per layer; the graph takes its normal quantile (0: dense).
  const formats::Json* pattern = c.find("activation_sparsity_pattern");
  if (pattern == nullptr || !pattern->is_array() || static_cast<int64_t>(pattern->size()) != s->n_layers)
    return c.error("activation_sparsity_pattern", fmt::format("must be a list of {} numbers", s->n_layers));
  std::vector<float> scales;
  for (const formats::Json& p : *pattern) {
    const double v = p.is_number() ? p.get<double>() : -1.0;
    if (v == 0.0) {
      scales.push_back(0.0f);
      continue;
    }
    if (!(v > 0.5 && v < 1.0))
      return k.unsupported("activation_sparsity_pattern",
                           fmt::format("{} (supported: 0, dense, or a keep-quantile in (0.5, 1))", p.dump()));
    scales.push_back(static_cast<float>(normal_quantile(static_cast<double>(static_cast<float>(v)))));
  }
  out.metadata.f32_array("gemma3n.activation_sparsity_scale", scales);
  return {};
}

}  // namespace

const HfAdapter kGemma2Hf{gemma2, kGemma2Tensors, false, kRenames, kTowers};
const HfAdapter kGemma3Hf{gemma3, kGemma3Tensors, false, kRenames, kTowers};
const HfAdapter kGemma3nHf{gemma3n, kGemma3nTensors, false, kRenames, kTowers};

}  // namespace glass::models
