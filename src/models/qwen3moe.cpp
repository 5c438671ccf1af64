// Qwen3-MoE (Qwen Team 2025, "Qwen3 Technical Report"): Qwen3's attention (QK-norm, rotate-half
// RoPE, GQA) with every dense MLP replaced by a mixture of experts: a router gives softmax
// probabilities over expert_count experts, each token uses the expert_used_count most probable
// ones with their probabilities renormalised to sum 1 (norm_topk_prob), and each expert is a SwiGLU
// MLP of width expert_feed_forward_length. No shared expert. Experts are stored stacked as 3-D
// tensors (ffn_{gate,up,down}_exps); the moe op reads only the chosen experts' rows.
// Serves GGUF general.architecture "qwen3moe" (HF model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B).
// feed_forward_length is written by converters but unused: the expert width is its own key.
#include "models/qwen3moe.h"

#include <fmt/format.h>

#include "models/decoder.h"

namespace glass::models {
namespace {

Result<DecoderExperts> read_experts(HparamReader& hp) {
  DecoderExperts e;
  e.count = hp.required_int("expert_count");
  e.used = hp.required_int("expert_used_count");
  e.ffn_dim = hp.required_int("expert_feed_forward_length");
  e.normalize = hp.optional_bool("expert_weights_norm", true);
  const int64_t gating = hp.optional_int("expert_gating_func", 1);  // llama.cpp's enum: 1 softmax, 2 sigmoid
  const int64_t shared = hp.optional_int("expert_shared_count", 0);
  if (auto st = hp.status(); !st) return st.error();
  if (gating != 1)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {} (only 1, softmax, is supported)",
                                                          hp.arch(), hp.key("expert_gating_func"), gating));
  if (shared != 0)
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {} = {}: shared experts are not supported",
                                                          hp.arch(), hp.key("expert_shared_count"), shared));
  if (e.count <= 0 || e.used <= 0 || e.used > e.count || e.ffn_dim <= 0)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: {} = {} must be within [1, {} = {}] and {} = {} positive", hp.arch(),
                                  hp.key("expert_used_count"), e.used, hp.key("expert_count"), e.count,
                                  hp.key("expert_feed_forward_length"), e.ffn_dim));
  return e;
}

}  // namespace

Result<ModelGraph> qwen3moe_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                      const BuildOptions& opt) {
  HparamReader hp(file, "qwen3moe");
  auto experts = read_experts(hp);
  if (!experts) return experts.error();
  return build_decoder(hp, w, opt,
                       DecoderRecipe{.qk_norm = true, .ffn = DecoderFfn::Moe, .experts = *experts});
}

}  // namespace glass::models
