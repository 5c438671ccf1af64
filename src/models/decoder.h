#pragma once
// The pre-norm RoPE decoder the Qwen and Phi families share, assembled once: per layer RMSNorm,
// q/k/v projections (separate or fused, optional biases, optional per-head q/k RMSNorm), rotate-half
// RoPE, paged-cache attention, residual, RMSNorm, a SwiGLU MLP (separate, fused [gate | up], or a
// mixture of experts), residual; then the final norm and the LM head (tied or not). Each family file
// states its recipe (qwen2.cpp, qwen3.cpp, phi3.cpp, qwen3moe.cpp).
#include <cstdint>

#include "models/architecture.h"
#include "models/hparams.h"

namespace glass::models {

enum class DecoderFfn : uint8_t {
  SwiGlu,       // ffn_gate, ffn_up, ffn_down
  FusedSwiGlu,  // ffn_up rows [gate | up], ffn_down (Phi-3)
  Moe,          // ffn_gate_inp router, ffn_{gate,up,down}_exps (Qwen3-MoE)
};

struct DecoderExperts {
  int64_t count = 0;  // expert_count
  int64_t used = 0;   // expert_used_count
  int64_t ffn_dim = 0;
  bool normalize = true;  // renormalise the chosen experts' probabilities to sum 1
};

struct DecoderRecipe {
  bool qkv_bias = false;   // attn_{q,k,v}.bias (Qwen2)
  bool qk_norm = false;    // attn_{q,k}_norm [head_dim] before RoPE (Qwen3)
  bool fused_qkv = false;  // attn_qkv rows [q | k | v] (Phi-3)
  DecoderFfn ffn = DecoderFfn::SwiGlu;
  DecoderExperts experts;  // ffn == Moe
};

// Reads the decoder config through `hp` (feed_forward_length unless the FFN is a mixture of experts)
// and builds the recipe's graph.
Result<ModelGraph> build_decoder(HparamReader& hp, const WeightIndex& w, const BuildOptions& opt,
                                 const DecoderRecipe& r);

}  // namespace glass::models
