// LFM2 from HF checkpoints (models/hf_families.h): config.json as llama.cpp's converter writes it
// (conversion/lfm2.py): head_count_kv per layer (0 for the "conv" layers), shortconv.l_cache from
// conv_L_cache, norm_eps, and the MLP width adjusted as the converter adjusts block_ff_dim. The
// convolution weights are stored [dim, 1, L]: bound as [dim, L], the same bytes.
#include <fmt/format.h>

#include <cstdint>

#include "models/hf_families.h"
#include "models/hf_keys.h"

namespace glass::models {
namespace {

constexpr HfTensorName kLfm2Tensors[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"model.embedding_norm.weight", "token_embd_norm.weight", HfRole::Required},  // the final norm
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.layers.{}.operator_norm.weight", "blk.{}.attn_norm.weight", HfRole::Required},
    {"model.layers.{}.ffn_norm.weight", "blk.{}.ffn_norm.weight", HfRole::Required},
    {"model.layers.{}.feed_forward.w1.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.feed_forward.w3.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.feed_forward.w2.weight", "blk.{}.ffn_down.weight", HfRole::Required},
    // Attention layers.
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.out_proj.weight", "blk.{}.attn_output.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.q_layernorm.weight", "blk.{}.attn_q_norm.weight", HfRole::Optional},
    {"model.layers.{}.self_attn.k_layernorm.weight", "blk.{}.attn_k_norm.weight", HfRole::Optional},
    // Short-convolution layers.
    {"model.layers.{}.conv.in_proj.weight", "blk.{}.shortconv.in_proj.weight", HfRole::Optional},
    {"model.layers.{}.conv.out_proj.weight", "blk.{}.shortconv.out_proj.weight", HfRole::Optional},
    {"model.layers.{}.conv.conv.weight", "blk.{}.shortconv.conv.weight", HfRole::Optional,
     HfTransform::DropUnitAxes},
};

// The converter's MLP width: block_ff_dim (or intermediate_size), when block_auto_adjust_ff_dim
// taken to 2/3, times block_ffn_dim_multiplier, rounded up to block_multiple_of.
Result<int64_t> ffn_width(const formats::HfObject& c) {
  auto ff = c.has("block_ff_dim") ? c.get_int("block_ff_dim") : c.get_int("intermediate_size");
  if (!ff) return ff.error();
  auto adjust = c.get_bool("block_auto_adjust_ff_dim", false);
  if (!adjust) return adjust.error();
  int64_t width = *ff;
  if (*adjust) {
    width = 2 * width / 3;
    if (c.has("block_ffn_dim_multiplier")) {
      auto mult = c.get_float("block_ffn_dim_multiplier");
      if (!mult) return mult.error();
      if (!(*mult > 0)) return c.error("block_ffn_dim_multiplier", "must be positive");
      width = static_cast<int64_t>(*mult * static_cast<double>(width));
    }
    auto multiple = c.get_int("block_multiple_of", 1);
    if (!multiple) return multiple.error();
    if (*multiple <= 0) return c.error("block_multiple_of", "must be positive");
    width = *multiple * ((width + *multiple - 1) / *multiple);
  }
  if (width <= 0 || width > (int64_t{1} << 31) - 1)
    return c.error("block_ff_dim", fmt::format("gives an MLP width of {}", width));
  return width;
}

Status lfm2(const formats::HfConfig& config, HfNormalized& out) {
  HfKeys k(config.config(), "lfm2", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "lfm2");
  if (auto st = k.require_bool("conv_bias", false, false, "lfm2's convolutions have no bias here"); !st)
    return st;
  if (auto st = k.require_bool("use_pos_enc", true, true, "lfm2's attention layers use RoPE"); !st) return st;
  if (auto st = k.require_bool("block_use_swiglu", true, true, "the MLP is SwiGLU"); !st) return st;
  auto n_layers = k.count("num_hidden_layers", "block_count");
  if (!n_layers) return n_layers.error();
  out.n_layers = *n_layers;
  auto dim = k.count("hidden_size", "embedding_length");
  if (!dim) return dim.error();
  auto heads = k.count("num_attention_heads", "attention.head_count");
  if (!heads) return heads.error();
  auto kv = k.count("num_key_value_heads", "", *heads);
  if (!kv) return kv.error();
  if (auto v = k.count("max_position_embeddings", "context_length", 128000); !v) return v.error();
  if (auto v = k.count("vocab_size", "vocab_size"); !v) return v.error();
  if (auto v = k.count("conv_L_cache", "shortconv.l_cache"); !v) return v.error();
  if (auto v = k.positive("norm_eps", "attention.layer_norm_rms_epsilon", 1e-5); !v) return v.error();
  auto theta = hf_rope_theta(c, "rope_theta", "full_attention", 1000000.0);
  if (!theta) return theta.error();
  if (!(*theta > 0)) return c.error("rope_theta", "must be positive");
  out.metadata.f32(k.key("rope.freq_base"), static_cast<float>(*theta));
  auto ffn = ffn_width(c);
  if (!ffn) return ffn.error();
  out.metadata.u32(k.key("feed_forward_length"), static_cast<uint32_t>(*ffn));
  // Which layers attend: layer_types "full_attention" (its kv heads) or "conv" (0).
  const formats::Json* types = c.find("layer_types");
  if (types == nullptr || !types->is_array() || static_cast<int64_t>(types->size()) != *n_layers)
    return c.error("layer_types", fmt::format("must be a list of {} layer types", *n_layers));
  std::vector<int32_t> kv_per_layer;
  for (size_t i = 0; i < types->size(); ++i) {
    const formats::Json& t = (*types)[i];
    if (!t.is_string() || (t != "conv" && t != "full_attention"))
      return c.error("layer_types",
                     fmt::format("[{}]: expected \"conv\" or \"full_attention\", got {}", i, t.dump()));
    kv_per_layer.push_back(t == "conv" ? 0 : static_cast<int32_t>(*kv));
  }
  out.metadata.i32_array(k.key("attention.head_count_kv"), kv_per_layer);
  // Tied unless the checkpoint says otherwise (LFM2's config calls it tie_embedding).
  auto tied = c.get_bool(c.has("tie_word_embeddings") ? "tie_word_embeddings" : "tie_embedding", true);
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return {};
}

}  // namespace

const HfAdapter kLfm2Hf{lfm2, kLfm2Tensors};

}  // namespace glass::models
