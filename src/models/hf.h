#pragma once
// Hugging Face checkpoints (config.json + safetensors) through the same architecture definitions
// as GGUF. A family that loads from HF has an HfAdapter: `normalize` maps config.json (and
// generation_config.json) to the GGUF metadata keys its from_gguf reads, and `tensors` maps HF
// tensor names to GGUF's canonical names, as data. open_hf_model checks the checkpoint against
// that table as a whole (all missing and unexpected names in one error) before any tensor is used.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "formats/gguf_metadata.h"
#include "formats/hf_config.h"
#include "formats/safetensors.h"
#include "glass/result.h"
#include "models/architecture.h"

namespace glass::models {

enum class HfRole : uint8_t {
  Required,
  Optional,
  Output,   // required unless the embeddings are tied; ignored when they are (HF ties them then)
  Ignored,  // buffers some checkpoints carry that no graph uses (rotary_emb.inv_freq)
};

// One row: "{}" in both names stands for the layer index.
struct HfTensorName {
  std::string_view hf;    // "model.layers.{}.self_attn.q_proj.weight"
  std::string_view gguf;  // "blk.{}.attn_q.weight"; empty for Ignored rows
  HfRole role;
};

// A tensor computed from the config at load (once, never per token), e.g. Llama 3 RoPE frequency
// factors, which GGUF files carry as rope_freqs.weight.
struct HfDerivedTensor {
  std::string name;  // canonical (GGUF) name
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// What an adapter's normalize produces.
struct HfNormalized {
  formats::GgufMetadataBuilder metadata;  // general.architecture, <arch>.* and tokenizer.ggml.*_id keys
  int64_t n_layers = 0;
  bool tied_embeddings = false;
  std::vector<HfDerivedTensor> derived;
};

struct HfAdapter {
  std::string_view architecture;  // the GGUF general.architecture whose from_gguf builds the graph
  Status (*normalize)(const formats::HfConfig& config, HfNormalized& out);
  std::span<const HfTensorName> tensors;
  // GGUF stores blk.N.attn_q / attn_k rows with RoPE pairs interleaved where HF rotates halves
  // (llama.cpp's converter permutes them); writing a GGUF (hf_to_gguf.h) permutes them back.
  bool gguf_permutes_qk = false;
};

// nullptr when the architecture cannot load from HF yet.
const HfAdapter* find_hf_adapter(std::string_view architecture);
// The registered architecture listing `model_type` among its hf_model_types; nullptr when none.
const Architecture* find_architecture_for_model_type(std::string_view model_type);

// An HF checkpoint, validated and bound: ready for arch->from_gguf(*metadata, weights, build).
struct HfModel {
  const Architecture* arch = nullptr;
  std::string model_type;
  std::optional<formats::GgufFile> metadata;
  WeightIndex weights;                  // pointers into the shards' mappings and `storage`
  std::shared_ptr<const void> storage;  // keeps the mappings and derived tensors alive
  // The shards' file mappings, where `weights` point (a repacked weight's pages can leave memory).
  std::vector<std::shared_ptr<const formats::MappedFile>> mappings;
  std::vector<int32_t> eog_ids;         // generation_config.json / config.json eos_token_id
  uint64_t file_bytes = 0;              // all safetensors files
};

// `dir` holds config.json and model.safetensors or model.safetensors.index.json with its shards.
Result<HfModel> open_hf_model(const std::filesystem::path& dir);

// Binds checkpoint tensors (by HF name) to canonical names through `table` for `n_layers` layers.
// Every Required row (and Output unless tied) must be present and every tensor must match a row;
// the error lists all missing and all unexpected names at once. Exposed for tests.
Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    std::span<const HfTensorName> table, int64_t n_layers, bool tied, std::string_view where);

}  // namespace glass::models
