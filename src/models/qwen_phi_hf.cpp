// Qwen2, Qwen3, Qwen3-MoE and Phi-3 from HF checkpoints (models/hf_families.h). Their GGUF forms
// rotate halves like HF, so q/k rows bind as stored.
#include <fmt/format.h>

#include <cstdint>

#include "models/hf_families.h"
#include "models/hf_keys.h"

namespace glass::models {
namespace {

// The pieces the four tables are made of, in HF's names: what every layer has first.
constexpr HfTensorName kCommon[] = {
    {"model.embed_tokens.weight", "token_embd.weight", HfRole::Required},
    {"model.norm.weight", "output_norm.weight", HfRole::Required},
    {"lm_head.weight", "output.weight", HfRole::Output},
    {"model.layers.{}.input_layernorm.weight", "blk.{}.attn_norm.weight", HfRole::Required},
    {"model.layers.{}.post_attention_layernorm.weight", "blk.{}.ffn_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.o_proj.weight", "blk.{}.attn_output.weight", HfRole::Required},
    {"model.layers.{}.self_attn.rotary_emb.inv_freq", "", HfRole::Ignored},
};
constexpr HfTensorName kQkv[] = {
    {"model.layers.{}.self_attn.q_proj.weight", "blk.{}.attn_q.weight", HfRole::Required},
    {"model.layers.{}.self_attn.k_proj.weight", "blk.{}.attn_k.weight", HfRole::Required},
    {"model.layers.{}.self_attn.v_proj.weight", "blk.{}.attn_v.weight", HfRole::Required},
};
constexpr HfTensorName kQkvBias[] = {
    {"model.layers.{}.self_attn.q_proj.bias", "blk.{}.attn_q.bias", HfRole::Required},
    {"model.layers.{}.self_attn.k_proj.bias", "blk.{}.attn_k.bias", HfRole::Required},
    {"model.layers.{}.self_attn.v_proj.bias", "blk.{}.attn_v.bias", HfRole::Required},
};
constexpr HfTensorName kQkNorm[] = {
    {"model.layers.{}.self_attn.q_norm.weight", "blk.{}.attn_q_norm.weight", HfRole::Required},
    {"model.layers.{}.self_attn.k_norm.weight", "blk.{}.attn_k_norm.weight", HfRole::Required},
};
constexpr HfTensorName kMlp[] = {
    {"model.layers.{}.mlp.gate_proj.weight", "blk.{}.ffn_gate.weight", HfRole::Required},
    {"model.layers.{}.mlp.up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
};
// Qwen3-MoE: a router and every expert's SwiGLU stored one by one, stacked as GGUF stacks them.
constexpr HfTensorName kExperts[] = {
    {"model.layers.{}.mlp.gate.weight", "blk.{}.ffn_gate_inp.weight", HfRole::Required},
    {"model.layers.{}.mlp.experts.{e}.gate_proj.weight", "blk.{}.ffn_gate_exps.weight", HfRole::Required},
    {"model.layers.{}.mlp.experts.{e}.up_proj.weight", "blk.{}.ffn_up_exps.weight", HfRole::Required},
    {"model.layers.{}.mlp.experts.{e}.down_proj.weight", "blk.{}.ffn_down_exps.weight", HfRole::Required},
};
// Phi-3 ships its projections fused, in GGUF's row order: qkv_proj rows [q | k | v], gate_up_proj
// rows [gate | up].
constexpr HfTensorName kPhi3Fused[] = {
    {"model.layers.{}.self_attn.qkv_proj.weight", "blk.{}.attn_qkv.weight", HfRole::Required},
    {"model.layers.{}.mlp.gate_up_proj.weight", "blk.{}.ffn_up.weight", HfRole::Required},
    {"model.layers.{}.mlp.down_proj.weight", "blk.{}.ffn_down.weight", HfRole::Required},
};

constexpr auto kQwen2Tensors = hf_rows(kCommon, kQkv, kQkvBias, kMlp);
constexpr auto kQwen3Tensors = hf_rows(kCommon, kQkv, kQkNorm, kMlp);
constexpr auto kQwen3MoeTensors = hf_rows(kCommon, kQkv, kQkNorm, kExperts);
constexpr auto kPhi3Tensors = hf_rows(kCommon, kPhi3Fused);

// The SiLU-gated decoder's keys, plus tied embeddings (default false in all four configs).
Result<HfDecoderShape> decoder(HfKeys& k, HfNormalized& out, const HfDecoderDefaults& d = {}) {
  if (auto st = k.require_one_of("hidden_act", "silu", {"silu"}, "the graph's MLP is SiLU-gated"); !st)
    return st.error();
  auto s = hf_decoder_keys(k, d);
  if (!s) return s.error();
  out.n_layers = s->n_layers;
  auto tied = k.config().get_bool("tie_word_embeddings", false);
  if (!tied) return tied.error();
  out.tied_embeddings = *tied;
  return s;
}

Status no_sliding_window(HfKeys& k) {
  return k.require_bool("use_sliding_window", false, false,
                        "sliding-window attention is not supported for this family");
}

Status qwen2(const formats::HfConfig& config, HfNormalized& out) {
  HfKeys k(config.config(), "qwen2", out.metadata);
  out.metadata.string("general.architecture", "qwen2");
  if (auto st = no_sliding_window(k); !st) return st;
  if (auto s = decoder(k, out); !s) return s.error();
  return {};
}

Status qwen3(const formats::HfConfig& config, HfNormalized& out) {
  HfKeys k(config.config(), "qwen3", out.metadata);
  out.metadata.string("general.architecture", "qwen3");
  if (auto st = no_sliding_window(k); !st) return st;
  if (auto st = k.require_bool("attention_bias", false, false, "qwen3 has no attention biases"); !st)
    return st;
  if (auto s = decoder(k, out); !s) return s.error();
  return {};
}

Status qwen3moe(const formats::HfConfig& config, HfNormalized& out) {
  HfKeys k(config.config(), "qwen3moe", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "qwen3moe");
  if (auto st = no_sliding_window(k); !st) return st;
  if (auto st = k.require_bool("attention_bias", false, false, "qwen3moe has no attention biases"); !st)
    return st;
  auto s = decoder(k, out);
  if (!s) return s.error();
  // Every layer a mixture of experts: no dense layers between them, no shared expert.
  if (auto step = c.get_int("decoder_sparse_step", 1); !step || *step != 1)
    return step ? k.unsupported("decoder_sparse_step", fmt::format("{} (only 1: every layer sparse)", *step))
                : step.error();
  if (const formats::Json* dense = c.find("mlp_only_layers"); dense != nullptr && !dense->empty())
    return k.unsupported("mlp_only_layers", "dense layers among the experts are not supported");
  if (auto shared = c.get_int("shared_expert_intermediate_size", 0); !shared || *shared != 0)
    return shared ? k.unsupported("shared_expert_intermediate_size", "shared experts are not supported")
                  : shared.error();
  if (auto v = k.count("num_experts", "expert_count"); !v) return v.error();
  if (auto v = k.count("num_experts_per_tok", "expert_used_count"); !v) return v.error();
  if (auto v = k.count("moe_intermediate_size", "expert_feed_forward_length"); !v) return v.error();
  auto norm = c.get_bool("norm_topk_prob", false);  // Qwen3MoeConfig's default
  if (!norm) return norm.error();
  out.metadata.boolean("qwen3moe.expert_weights_norm", *norm);
  return {};
}

Status phi3(const formats::HfConfig& config, HfNormalized& out) {
  HfKeys k(config.config(), "phi3", out.metadata);
  const formats::HfObject& c = k.config();
  out.metadata.string("general.architecture", "phi3");
  // LongRoPE (the 128k variants' rope_scaling with long/short factors) is not supported.
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    auto r = c.object(key);
    if (!r) return r.error();
    if (*r && ((*r)->has("long_factor") || (*r)->has("short_factor")))
      return k.unsupported(key, "LongRoPE scaling (long_factor / short_factor) is not supported");
  }
  auto s = decoder(k, out);
  if (!s) return s.error();
  // llama.cpp's rule: int(partial_rotary_factor * hidden_size) // num_attention_heads dims rotate.
  auto partial = c.get_float("partial_rotary_factor", 1.0);
  if (!partial) return partial.error();
  const auto n_rot = static_cast<int64_t>(*partial * static_cast<double>(s->dim)) / s->n_heads;
  if (n_rot <= 0 || n_rot > s->head_dim || n_rot % 2 != 0)
    return c.error("partial_rotary_factor",
                   fmt::format("gives {} rotated dims of head_dim {}", n_rot, s->head_dim));
  out.metadata.u32("phi3.rope.dimension_count", static_cast<uint32_t>(n_rot));
  auto original = c.get_int(c.has("original_max_position_embeddings") ? "original_max_position_embeddings"
                                                                      : "max_position_embeddings");
  if (!original) return original.error();
  if (*original > 0 && *original <= INT32_MAX)
    out.metadata.u32("phi3.rope.scaling.original_context_length", static_cast<uint32_t>(*original));
  auto window = c.get_int("sliding_window", 0);  // null: 0, as the converter writes (Phi-4)
  if (!window) return window.error();
  if (*window < 0 || *window > INT32_MAX) return c.error("sliding_window", "must be in [0, 2^31)");
  out.metadata.u32("phi3.attention.sliding_window", static_cast<uint32_t>(*window));
  return {};
}

}  // namespace

const HfAdapter kQwen2Hf{qwen2, kQwen2Tensors};
const HfAdapter kQwen3Hf{qwen3, kQwen3Tensors};
const HfAdapter kQwen3MoeHf{qwen3moe, kQwen3MoeTensors};
const HfAdapter kPhi3Hf{phi3, kPhi3Tensors};

}  // namespace glass::models
