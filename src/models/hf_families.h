#pragma once
// The HF adapters (models/hf.h) of the families besides Llama: config.json -> the GGUF keys their
// from_gguf reads, and HF tensor names -> GGUF names. What llama.cpp's convert_hf_to_gguf.py does
// for each, applied at load: RoPE rows are never permuted (these families rotate halves in both
// formats), Gemma 2/3 norm weights become 1 + w, Qwen3-MoE experts and Gemma 3n's AltUp
// projections are stacked, Phi-3's fused qkv / gate_up keep their layout.
#include "models/hf.h"

namespace glass::models {

extern const HfAdapter kQwen2Hf;     // model_type "qwen2" (Qwen2ForCausalLM)
extern const HfAdapter kQwen3Hf;     // "qwen3" (Qwen3ForCausalLM)
extern const HfAdapter kQwen3MoeHf;  // "qwen3_moe" (Qwen3MoeForCausalLM), experts stored one by one
extern const HfAdapter kPhi3Hf;      // "phi3" (Phi3ForCausalLM: Phi-3, Phi-3.5-mini, Phi-4-mini)
extern const HfAdapter kGemma2Hf;    // "gemma2" (Gemma2ForCausalLM)
extern const HfAdapter kGemma3Hf;    // "gemma3_text" (Gemma3ForCausalLM), "gemma3" (text_config)
// "gemma3n_text", "gemma3n" (text_config; towers skipped)
extern const HfAdapter kGemma3nHf;
// The multimodal Gemma checkpoints' text-model prefixes and the towers skipped (gemma_hf.cpp).
extern const HfRename kGemmaRenames[3];
extern const std::string_view kGemmaTowers[7];
// "gemma4" (text_config; towers skipped), "gemma4_text"
extern const HfAdapter kGemma4Hf;
// "lfm2" (Lfm2ForCausalLM); conv weights [dim, 1, L] bound as [dim, L]
extern const HfAdapter kLfm2Hf;
// "qwen3_5" (text_config; tower and MTP skipped), "qwen3_5_text"
extern const HfAdapter kQwen35Hf;

}  // namespace glass::models
