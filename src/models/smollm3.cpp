// SmolLM3 (Hugging Face 2025, "SmolLM3: smol, multilingual, long-context reasoner"): the Llama
// decoder with NoPE layers — every fourth layer attends without rotary positions (Yang et al. 2025,
// "Rope to Nope and back again").
// Serves GGUF general.architecture "smollm3" (HF model_type "smollm3"). llama.cpp fixes the period
// at 4 and GGUF files carry no key for it; the HF adapter refuses other `no_rope_layers` patterns.
#include "models/llama.h"

namespace glass::models {

Result<ModelGraph> smollm3_from_gguf(const formats::GgufFile& file, const WeightIndex& weights,
                                     const BuildOptions& opt) {
  constexpr LlamaVariant kSmolLm3{.arch = "smollm3", .no_rope_period = 4};
  auto c = llama_config_from_gguf(file, weights, kSmolLm3.arch);
  if (!c) return c.error();
  auto g = build_llama(*c, weights, opt, kSmolLm3);
  if (!g) return g.error();
  return decoder_model_graph(std::move(*g), *c, opt, ", no RoPE in every 4th layer");
}

}  // namespace glass::models
