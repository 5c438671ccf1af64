#pragma once
#include "models/hf.h"

namespace glass::models {

// HF model_type "llama" / "mistral" (LlamaForCausalLM, MistralForCausalLM) -> GGUF "llama".
extern const HfAdapter kLlamaHf;
// HF model_type "smollm3" (SmolLM3ForCausalLM) -> GGUF "smollm3": Llama's keys and tensors.
extern const HfAdapter kSmolLm3Hf;

// Llama 3 RoPE frequency factors (rope_scaling.rope_type "llama3"), as GGUF's rope_freqs.weight:
// per rotated pair i, the divisor of its inverse frequency base^(-2i/n_rot). Exposed for tests.
std::vector<float> llama3_rope_factors(int64_t n_rot, double base, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context);

}  // namespace glass::models
