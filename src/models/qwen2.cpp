// Qwen2 (Yang et al. 2024, "Qwen2 Technical Report"): the pre-norm RMSNorm / RoPE / GQA / SwiGLU
// decoder of Llama with biases on the q, k and v projections, rotate-half (NeoX) RoPE with a large
// base, and an output matrix of its own (tied to the embedding in the smallest sizes).
// Serves GGUF general.architecture "qwen2" (HF model_type "qwen2": Qwen2, Qwen2.5, Qwen2.5-Coder).
#include "models/qwen2.h"

#include "models/decoder.h"

namespace glass::models {

Result<ModelGraph> qwen2_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                   const BuildOptions& opt) {
  HparamReader hp(file, "qwen2");
  return build_decoder(hp, w, opt, DecoderRecipe{.qkv_bias = true});
}

}  // namespace glass::models
