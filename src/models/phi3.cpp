// Phi-3 (Abdin et al. 2024, "Phi-3 Technical Report") and Phi-4-mini: the pre-norm RMSNorm / GQA /
// SwiGLU decoder with its projections fused, q, k and v in one matrix (attn_qkv, rows
// [q | k | v]) and gate and up in another (ffn_up, rows [gate | up]), split here by slicing the
// products. RoPE is rotate-half and may cover only the first rope.dimension_count dims of each head
// (partial rotary, 0.75 in Phi-4-mini). Untied output.
// Serves GGUF general.architecture "phi3" (HF model_type "phi3"). Not covered: LongRoPE (the
// rope_factors_long/short tensors of the 128k-context variants) fails at load, naming the tensor.
#include "models/phi3.h"

#include <fmt/format.h>

#include "models/decoder.h"

namespace glass::models {

Result<ModelGraph> phi3_from_gguf(const formats::GgufFile& file, const WeightIndex& w,
                                  const BuildOptions& opt) {
  for (const char* longrope : {"rope_factors_long.weight", "rope_factors_short.weight"})
    if (w.contains(longrope))
      return make_error(
          ErrorCode::Unsupported,
          fmt::format("phi3: tensor '{}' asks for LongRoPE scaling, which glass does not support", longrope));
  HparamReader hp(file, "phi3");
  return build_decoder(hp, w, opt, DecoderRecipe{.fused_qkv = true, .ffn = DecoderFfn::FusedSwiGlu});
}

}  // namespace glass::models
