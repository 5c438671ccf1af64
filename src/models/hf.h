#pragma once
// Hugging Face checkpoints (config.json + safetensors) through the same architecture definitions
// as GGUF. A family that loads from HF has an HfAdapter: `normalize` maps config.json (and
// generation_config.json) to the GGUF metadata keys its from_gguf reads, and `tensors` maps HF
// tensor names to GGUF's canonical names, as data. open_hf_model checks the checkpoint against
// that table as a whole (all missing and unexpected names in one error) before any tensor is used.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <iterator>
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

// What a row's HF tensor becomes besides a new name. Both are computed once, at load, into
// memory the model owns (never per token); every other tensor stays in the file mapping.
enum class HfTransform : uint8_t {
  None,
  // GGUF stores 1 + w (as F32): Gemma 2/3's RMSNorm computes x * (1 + w) and llama.cpp's converter
  // adds the 1, so the graph multiplies by the stored value for both formats.
  AddOne,
  // The shape without its size-1 axes, the same bytes (LFM2's conv weights [dim, 1, L] are GGUF's
  // [dim, L], as the converter squeezes them): a view, nothing is copied.
  DropUnitAxes,
  // -exp(w) as F32 (Qwen 3.5's A_log: the converter stores A = -exp(A_log)).
  NegExp,
};

// One row: "{}" in both names stands for the layer index. An HF name may also hold "{e}": the
// tensors with e = 0, 1, ... are stacked along a new outer axis into the one GGUF tensor (experts
// of a layer, Gemma 3n's AltUp projections), as llama.cpp's converter stacks them; they must share
// shape and dtype and leave no index out.
struct HfTensorName {
  std::string_view hf;    // "model.layers.{}.self_attn.q_proj.weight"
  std::string_view gguf;  // "blk.{}.attn_q.weight"; empty for Ignored rows
  HfRole role;
  HfTransform transform = HfTransform::None;
};

// One table from several pieces (families share most rows): hf_rows(kCommon, kQkNorm, kMlp).
template <size_t... N>
constexpr auto hf_rows(const HfTensorName (&... parts)[N]) {
  std::array<HfTensorName, (N + ...)> out{};
  size_t at = 0;
  ((std::copy(std::begin(parts), std::end(parts), out.begin() + static_cast<std::ptrdiff_t>(at)), at += N),
   ...);
  return out;
}

// An HF name prefix replaced before the table is consulted: multimodal checkpoints keep the text
// model under another prefix ("model.language_model." for "model.").
struct HfRename {
  std::string_view from, to;
};

// Tensors bind_hf_tensors had to build (stacked parts, shifted norms): the WeightIndex points into
// these buffers, which never move once made.
struct HfOwnedTensors {
  std::deque<std::vector<std::byte>> buffers;
  std::deque<formats::SafetensorsTensor>
      tensors;  // made at load (MLX triplets as Q4_1 / Q8_A): point into buffers
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
  Status (*normalize)(const formats::HfConfig& config, HfNormalized& out);
  std::span<const HfTensorName> tensors;
  // GGUF stores blk.N.attn_q / attn_k rows with RoPE pairs interleaved where HF rotates halves
  // (llama.cpp's converter permutes them); writing a GGUF (hf_to_gguf.h) permutes them back.
  bool gguf_permutes_qk = false;
  std::span<const HfRename> renames = {};
  // Prefixes of tensors the text graph never reads (vision and audio towers): skipped.
  std::span<const std::string_view> skipped = {};
  // What keeps a checkpoint (its normalized keys) from being written as llama.cpp's GGUF by
  // hf_to_gguf; nullptr: nothing.
  Status (*gguf_writable)(const formats::GgufFile& keys) = nullptr;
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
  std::vector<int32_t> eog_ids;  // generation_config.json / config.json eos_token_id
  uint64_t file_bytes = 0;       // all safetensors files
};

// `dir` holds config.json and model.safetensors or model.safetensors.index.json with its shards.
Result<HfModel> open_hf_model(const std::filesystem::path& dir);

// Binds checkpoint tensors (by HF name) to canonical names through `table` for `n_layers` layers.
// Every Required row (and Output unless tied) must be present and every tensor must match a row;
// the error lists all missing and all unexpected names at once. Exposed for tests.
// Rows that stack or transform need `owned`: without it they are an Internal error.
Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    std::span<const HfTensorName> table, int64_t n_layers, bool tied, std::string_view where,
    HfOwnedTensors* owned = nullptr);
// The same through an adapter: its renames and skipped prefixes first, then its table.
Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    const HfAdapter& adapter, int64_t n_layers, bool tied, std::string_view where, HfOwnedTensors& owned);

// The object holding a multimodal config's text model (config.json's "text_config", when present),
// else config.json itself.
Result<formats::HfObject> hf_text_config(const formats::HfConfig& config);

}  // namespace glass::models
