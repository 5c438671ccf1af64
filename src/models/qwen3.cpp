// Qwen3 (Qwen Team 2025, "Qwen3 Technical Report"): Qwen2's decoder without the q/k/v biases and
// with QK-norm, an RMSNorm over every query and key head (weights [head_dim]) before RoPE, which
// keeps attention logits bounded. head_dim comes from attention.key_length (128 in the released
// sizes, so n_heads * head_dim may differ from dim). Output tied (0.6B-4B) or untied.
// Serves GGUF general.architecture "qwen3" (HF model_type "qwen3").
#include "models/qwen3.h"

#include "models/decoder.h"

namespace glass::models {

Result<ModelGraph> qwen3_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                   const BuildOptions& opt) {
  HparamReader hp(file, "qwen3");
  return build_decoder(hp, w, opt, DecoderRecipe{.qk_norm = true});
}

}  // namespace glass::models
