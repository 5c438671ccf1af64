// Qwen 3.5 from HF checkpoints (models/hf_families.h): model_type "qwen3_5" (its text_config, the
// text model under model.language_model., the vision tower and the MTP layers skipped) or
// "qwen3_5_text". config.json becomes the qwen35.* keys llama.cpp's converter writes
// (conversion/qwen.py); what it changes in the tensors is done at load: the (1 + w) RMSNorm weights
// gain their 1 (not the DeltaNet's gated norm, which multiplies by w), A_log becomes A = -exp(A_log),
// the conv1d taps [C, 1, K] lose their unit axis. The converter also reorders value heads so that
// the key heads tile them; glass reads the checkpoint's grouped order instead (DeltaNetAttrs), so
// nothing else is copied.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>

#include "models/hf_families.h"
#include "models/hf_keys.h"

namespace glass::models {
namespace {

constexpr HfTensorName kQwen35Tensors[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"model.norm.weight", "output_norm.weight", HfRole::Required, HfTransform::AddOne},
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required,
     HfTransform::AddOne},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.post_attention_norm.weight", HfRole::Required,
     HfTransform::AddOne},
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
    // Gated attention layers.
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight", HfRole::Optional,
     HfTransform::AddOne},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight", HfRole::Optional,
     HfTransform::AddOne},
    // Gated DeltaNet layers.
    {"model.layers.{}.linear_attn.in_proj_qkv.weight", "blk.{}.attn_qkv.weight", HfRole::Optional},
    {"model.layers.{}.linear_attn.in_proj_z.weight", "blk.{}.attn_gate.weight", HfRole::Optional},
    {"model.layers.{}.linear_attn.in_proj_b.weight", "blk.{}.ssm_beta.weight", HfRole::Optional},
    {"model.layers.{}.linear_attn.in_proj_a.weight", "blk.{}.ssm_alpha.weight", HfRole::Optional},
    {"model.layers.{}.linear_attn.conv1d.weight", "blk.{}.ssm_conv1d.weight", HfRole::Optional,
     HfTransform::DropUnitAxes},
    {"model.layers.{}.linear_attn.dt_bias", "blk.{}.ssm_dt.bias", HfRole::Optional},
    {"model.layers.{}.linear_attn.A_log", "blk.{}.ssm_a", HfRole::Optional, HfTransform::NegExp},
    {"model.layers.{}.linear_attn.norm.weight", "blk.{}.ssm_norm.weight", HfRole::Optional},
    {"model.layers.{}.linear_attn.out_proj.weight", "blk.{}.ssm_out.weight", HfRole::Optional},
};
constexpr HfRename kRenames[] = {{"model.language_model.", "model."}};
constexpr std::string_view kSkipped[] = {"model.visual.", "mtp."};

Status qwen35(const formats::HfConfig& config, HfNormalized& out) {
  auto text = hf_text_config(config);
  if (!text) return text.error();
  HfKeys k(*text, "qwen35", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "qwen35");
  if (auto st = k.require_one_of("hidden_act", "silu", {"silu"}, "the graph's MLP is SiLU-gated"); !st)
    return st;
  if (auto st = k.require_bool("attn_output_gate", true, true, "Qwen 3.5's attention gates its output"); !st)
    return st;
  if (c.has("num_experts"))
    return k.unsupported("num_experts", "the MoE sizes (qwen35moe) are not supported yet");
  auto s = hf_decoder_keys(k, {.max_positions = 262144, .rms_eps = 1e-6, .head_dim = 256, .rope_theta = 1e7});
  if (!s) return s.error();
  out.n_layers = s->n_layers;
  // Partial rotary: the converter's rope.dimension_count; M-RoPE sections as written (text
  // positions rotate the first three alike).
  auto params = c.object("rope_parameters");
  if (!params) return params.error();
  const formats::HfObject rope = *params ? **params : c;
  auto top = c.get_float("partial_rotary_factor", 0.25);  // transformers 4 kept it at the top level
  if (!top) return top.error();
  auto partial = rope.get_float("partial_rotary_factor", *top);
  if (!partial) return partial.error();
  const auto n_rot = static_cast<int64_t>(std::llround(static_cast<double>(s->head_dim) * *partial));
  if (n_rot <= 0 || n_rot > s->head_dim || n_rot % 2 != 0)
    return c.error("partial_rotary_factor",
                   fmt::format("gives {} rotated dims of head_dim {}", n_rot, s->head_dim));
  out.metadata.u32(k.key("rope.dimension_count"), static_cast<uint32_t>(n_rot));
  std::vector<int32_t> sections{11, 11, 10, 0};
  if (const formats::Json* m = rope.find("mrope_section"); m != nullptr) {
    if (!m->is_array() || m->size() > 4)
      return rope.error("mrope_section", "must be a list of at most 4 sizes");
    sections.assign(4, 0);
    for (size_t i = 0; i < m->size(); ++i) {
      if (!(*m)[i].is_number_integer() || (*m)[i].get<int64_t>() < 0 || (*m)[i].get<int64_t>() > 4096)
        return rope.error("mrope_section", "must hold sizes from 0 to 4096");
      sections[i] = static_cast<int32_t>((*m)[i].get<int64_t>());
    }
  }
  out.metadata.i32_array(k.key("rope.dimension_sections"), sections);
  // The Gated DeltaNet's sizes.
  if (auto v = k.count("linear_conv_kernel_dim", "ssm.conv_kernel", 4); !v) return v.error();
  auto key_dim = k.count("linear_key_head_dim", "ssm.state_size", 128);
  if (!key_dim) return key_dim.error();
  auto value_dim = k.count("linear_value_head_dim", "", 128);
  if (!value_dim) return value_dim.error();
  auto k_heads = k.count("linear_num_key_heads", "ssm.group_count", 16);
  if (!k_heads) return k_heads.error();
  auto v_heads = k.count("linear_num_value_heads", "ssm.time_step_rank", 32);
  if (!v_heads) return v_heads.error();
  out.metadata.u32(k.key("ssm.inner_size"), static_cast<uint32_t>(*value_dim * *v_heads));
  // Which layers attend: layer_types ("linear_attention" / "full_attention"), else the interval.
  if (const formats::Json* types = c.find("layer_types"); types != nullptr) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != s->n_layers)
      return c.error("layer_types", fmt::format("must be a list of {} layer types", s->n_layers));
    std::vector<bool> recurrent;
    for (size_t i = 0; i < types->size(); ++i) {
      const formats::Json& t = (*types)[i];
      if (!t.is_string() || (t != "linear_attention" && t != "full_attention"))
        return c.error(
            "layer_types",
            fmt::format("[{}]: expected \"linear_attention\" or \"full_attention\", got {}", i, t.dump()));
      recurrent.push_back(t == "linear_attention");
    }
    out.metadata.bool_array(k.key("attention.recurrent_layers"), recurrent);
  } else if (auto v = k.count("full_attention_interval", "full_attention_interval", 4); !v) {
    return v.error();
  }
  auto outer = config.config().get_bool("tie_word_embeddings", false);  // the multimodal wrapper's
  if (!outer) return outer.error();
  auto tied = c.get_bool("tie_word_embeddings", *outer);
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return {};
}

// llama.cpp's GGUF tiles the key heads over the value heads (its converter reorders them); a
// checkpoint whose value heads outnumber its key heads is not written in that order yet.
Status gguf_writable(const formats::GgufFile& keys) {
  const auto k = keys.get_u32("qwen35.ssm.group_count"), v = keys.get_u32("qwen35.ssm.time_step_rank");
  if (k && v && *k != *v)
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("hf to gguf: qwen35 with {} key heads and {} value heads: writing its value heads "
                    "in GGUF's tiled order is not supported yet (glass runs the HF directory as it is)",
                    *k, *v));
  return {};
}

}  // namespace

const HfAdapter kQwen35Hf{qwen35, kQwen35Tensors, false, kRenames, kSkipped, gguf_writable};

}  // namespace glass::models
