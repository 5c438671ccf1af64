// Architectures by GGUF general.architecture (and HF model_type). One line per family.
#include <algorithm>
#include <array>

#include "models/architecture.h"
#include "models/gemma.h"
#include "models/gemma3n.h"
#include "models/llama.h"
#include "models/phi3.h"
#include "models/qwen2.h"
#include "models/qwen3.h"
#include "models/qwen3moe.h"

namespace glass::models {
namespace {

const std::array<Architecture, 8>& registry() {
  static const std::array<Architecture, 8> kArchitectures = {{
      {"llama", {"llama", "mistral"}, llama_from_gguf},
      {"qwen2", {"qwen2"}, qwen2_from_gguf},
      {"qwen3", {"qwen3"}, qwen3_from_gguf},
      {"phi3", {"phi3"}, phi3_from_gguf},
      {"qwen3moe", {"qwen3_moe"}, qwen3moe_from_gguf},
      {"gemma2", {"gemma2"}, gemma2_from_gguf},
      {"gemma3", {"gemma3", "gemma3_text"}, gemma3_from_gguf},
      {"gemma3n", {"gemma3n", "gemma3n_text"}, gemma3n_from_gguf},
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
  return std::max(std::min(n_ctx_train, kDefaultContext), opt.min_ctx);
}

CacheGeometry cache_geometry(const BuildOptions& opt, int64_t n_ctx) {
  CacheGeometry g;
  g.block_size = std::max<int64_t>(1, opt.kv_block_size);
  g.max_blocks = (n_ctx + g.block_size - 1) / g.block_size;
  const int64_t rows = opt.kv_size > 0 ? opt.kv_size : n_ctx;
  g.rows = (rows + g.block_size - 1) / g.block_size * g.block_size;
  g.n_seq = std::max<int64_t>(1, opt.n_seq_max);
  return g;
}

std::vector<std::string_view> architecture_names() {
  std::vector<std::string_view> names;
  for (const Architecture& a : registry()) names.push_back(a.name);
  return names;
}

}  // namespace glass::models
