// Architectures by GGUF general.architecture (and HF model_type): one row per family, serving its
// GGUF files and its HF checkpoints.
#include <algorithm>
#include <array>

#include "models/architecture.h"
#include "models/gemma.h"
#include "models/gemma3n.h"
#include "models/gemma4.h"
#include "models/gptoss.h"
#include "models/hf_families.h"
#include "models/hparam_bounds.h"
#include "models/lfm2.h"
#include "models/llama.h"
#include "models/llama_hf.h"
#include "models/phi3.h"
#include "models/qwen2.h"
#include "models/qwen3.h"
#include "models/qwen35.h"
#include "models/qwen3moe.h"

namespace glass::models {
namespace {

// Every family's from_gguf behind the same check of its hyper-parameters against the file
// (hparam_bounds.h), so no family reads a layer count or a head count the file cannot hold.
template <Result<ModelGraph> (*FromGguf)(const formats::GgufFile&, const WeightIndex&, const BuildOptions&),
          const char* Name>
Result<ModelGraph> checked(const formats::GgufFile& file, const WeightIndex& weights,
                           const BuildOptions& opt) {
  if (Status s = check_hparams_fit_file(file, weights, Name); !s.ok()) return s.error();
  return FromGguf(file, weights, opt);
}

constexpr char kLlama[] = "llama", kQwen2[] = "qwen2", kQwen3[] = "qwen3", kPhi3[] = "phi3",
               kQwen3Moe[] = "qwen3moe", kGemma2[] = "gemma2", kGemma3[] = "gemma3", kGemma3n[] = "gemma3n",
               kSmolLm3[] = "smollm3", kLfm2[] = "lfm2", kQwen35[] = "qwen35", kQwen35Moe[] = "qwen35moe",
               kGemma4[] = "gemma4", kGptOss[] = "gpt-oss";

const std::array<Architecture, 14>& registry() {
  static const std::array<Architecture, 14> kArchitectures = {{
      {kLlama, {"llama", "mistral"}, checked<llama_from_gguf, kLlama>, &kLlamaHf},
      {kQwen2, {"qwen2"}, checked<qwen2_from_gguf, kQwen2>, &kQwen2Hf},
      {kQwen3, {"qwen3"}, checked<qwen3_from_gguf, kQwen3>, &kQwen3Hf},
      {kPhi3, {"phi3"}, checked<phi3_from_gguf, kPhi3>, &kPhi3Hf},
      {kQwen3Moe, {"qwen3_moe"}, checked<qwen3moe_from_gguf, kQwen3Moe>, &kQwen3MoeHf},
      {kGemma2, {"gemma2"}, checked<gemma2_from_gguf, kGemma2>, &kGemma2Hf},
      {kGemma3, {"gemma3", "gemma3_text"}, checked<gemma3_from_gguf, kGemma3>, &kGemma3Hf},
      {kGemma3n, {"gemma3n", "gemma3n_text"}, checked<gemma3n_from_gguf, kGemma3n>, &kGemma3nHf},
      {kSmolLm3, {"smollm3"}, checked<smollm3_from_gguf, kSmolLm3>, &kSmolLm3Hf},
      {kLfm2, {"lfm2"}, checked<lfm2_from_gguf, kLfm2>, &kLfm2Hf},
      {kQwen35, {"qwen3_5", "qwen3_5_text"}, checked<qwen35_from_gguf, kQwen35>, &kQwen35Hf},
      {kQwen35Moe, {}, checked<qwen35moe_from_gguf, kQwen35Moe>, nullptr},
      {kGemma4, {"gemma4", "gemma4_text"}, checked<gemma4_from_gguf, kGemma4>, &kGemma4Hf},
      {kGptOss, {}, checked<gptoss_from_gguf, kGptOss>, nullptr},
  }};
  return kArchitectures;
}

}  // namespace

const Architecture* find_architecture(std::string_view gguf_name) {
  for (const Architecture& a : registry())
    if (a.name == gguf_name) return &a;
  return nullptr;
}

int64_t choose_context(const BuildOptions& opt, int64_t n_ctx_train) {
  if (opt.n_ctx > 0) return opt.n_ctx;
  // min_ctx (a prompt's bytes plus what is generated) never takes the default past the larger of the
  // training context and llama.cpp's default -c: a longer prompt is then refused for the context (-c)
  // at once, as llama.cpp refuses it, instead of sizing a context by the prompt's characters.
  const int64_t least = std::min(opt.min_ctx, std::max(n_ctx_train, kDefaultContext));
  return std::max(std::min(n_ctx_train, kDefaultContext), least);
}

std::vector<std::string_view> architecture_names() {
  std::vector<std::string_view> names;
  for (const Architecture& a : registry()) names.push_back(a.name);
  return names;
}

}  // namespace glass::models
