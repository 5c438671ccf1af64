// HF checkpoint loading: config -> GGUF metadata through the family's adapter, safetensors ->
// WeightIndex through its name table (models/hf.h).
#include "models/hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "formats/safetensors_checkpoint.h"
#include "models/hparam_bounds.h"
#include "models/llama_hf.h"

namespace glass::models {
namespace {

// Families that load from HF, by GGUF architecture name. One line per family.
constexpr const HfAdapter* kAdapters[] = {&kLlamaHf};

// Splits a "{}" pattern; no placeholder: the whole pattern is the prefix.
struct Pattern {
  std::string_view prefix, suffix;
  bool per_layer;
};
Pattern split(std::string_view p) {
  const size_t at = p.find("{}");
  if (at == std::string_view::npos) return {p, {}, false};
  return {p.substr(0, at), p.substr(at + 2), true};
}

// The layer index when `name` matches a per-layer pattern: prefix, a decimal without leading zeros,
// suffix. -1 when it does not match.
int64_t match_layer(std::string_view name, const Pattern& p) {
  if (name.size() <= p.prefix.size() + p.suffix.size() || !name.starts_with(p.prefix) ||
      !name.ends_with(p.suffix))
    return -1;
  const std::string_view digits =
      name.substr(p.prefix.size(), name.size() - p.prefix.size() - p.suffix.size());
  if (digits.size() > 1 && digits.front() == '0') return -1;
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return -1;
  return v;
}

std::string with_layer(std::string_view pattern, int64_t layer) {
  const Pattern p = split(pattern);
  if (!p.per_layer) return std::string(pattern);
  return fmt::format("{}{}{}", p.prefix, layer, p.suffix);
}

bool computes_with(graph::DType t) {
  return t == graph::DType::F32 || t == graph::DType::F16 || t == graph::DType::BF16;
}

// The safetensors storage and the derived tensors, kept alive together by the model.
struct Storage {
  formats::SafetensorsCheckpoint checkpoint;
  std::vector<HfDerivedTensor> derived;
};

}  // namespace

const HfAdapter* find_hf_adapter(std::string_view architecture) {
  for (const HfAdapter* a : kAdapters)
    if (a->architecture == architecture) return a;
  return nullptr;
}

const Architecture* find_architecture_for_model_type(std::string_view model_type) {
  for (std::string_view name : architecture_names()) {
    const Architecture* a = find_architecture(name);
    if (a != nullptr &&
        std::find(a->hf_model_types.begin(), a->hf_model_types.end(), model_type) != a->hf_model_types.end())
      return a;
  }
  return nullptr;
}

Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    std::span<const HfTensorName> table, int64_t n_layers, bool tied, std::string_view where) {
  // Each layer needs at least one tensor, so a layer count beyond the tensor count is wrong; the
  // bound also keeps the enumeration of expected names proportional to the checkpoint.
  if (n_layers < 0 || static_cast<uint64_t>(n_layers) > tensors.size())
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: the config says {} layers but the checkpoint holds {} tensors", where,
                                  n_layers, tensors.size()));
  WeightIndex out;
  std::vector<std::string> unexpected, unusable;
  for (const auto& [name, t] : tensors) {
    const HfTensorName* row = nullptr;
    int64_t layer = -1;
    for (const HfTensorName& r : table) {
      const Pattern p = split(r.hf);
      if (!p.per_layer && name == r.hf) {
        row = &r;
        break;
      }
      if (p.per_layer) {
        layer = match_layer(name, p);
        if (layer >= 0) {
          row = &r;
          break;
        }
      }
    }
    if (row == nullptr || layer >= n_layers) {
      unexpected.push_back(name);
      continue;
    }
    if (row->role == HfRole::Ignored || (row->role == HfRole::Output && tied)) continue;
    if (!t->graph_dtype || !computes_with(*t->graph_dtype)) {
      unusable.push_back(fmt::format("'{}' ({})", name, t->dtype));
      continue;
    }
    out.emplace(with_layer(row->gguf, layer), WeightInfo{t->shape, *t->graph_dtype, t->data});
  }
  std::vector<std::string> missing;
  for (const HfTensorName& r : table) {
    if (r.role != HfRole::Required && !(r.role == HfRole::Output && !tied)) continue;
    const int64_t n = split(r.hf).per_layer ? n_layers : 1;
    for (int64_t i = 0; i < n; ++i) {
      std::string name = with_layer(r.hf, i);
      if (tensors.find(name) == tensors.end()) missing.push_back(std::move(name));
    }
  }
  if (!missing.empty() || !unexpected.empty()) {
    std::string msg = fmt::format("{}: the checkpoint does not match the architecture ({} layers{})", where,
                                  n_layers, tied ? ", tied embeddings" : "");
    if (!missing.empty()) msg += fmt::format("; {} missing: {}", missing.size(), fmt::join(missing, ", "));
    if (!unexpected.empty())
      msg += fmt::format("; {} unexpected: {}", unexpected.size(), fmt::join(unexpected, ", "));
    return make_error(ErrorCode::InvalidFile, msg);
  }
  if (!unusable.empty())
    return make_error(ErrorCode::Unsupported,
                      fmt::format("{}: tensors in a dtype glass does not compute with (F32, F16, BF16): {}",
                                  where, fmt::join(unusable, ", ")));
  return out;
}

Result<HfModel> open_hf_model(const std::filesystem::path& dir) {
  auto config = formats::HfConfig::open(dir);
  if (!config) return config.error();
  // The weights before the config's meaning: a directory without safetensors says so first.
  auto checkpoint = formats::SafetensorsCheckpoint::open(dir);
  if (!checkpoint) return checkpoint.error();
  HfModel m;
  m.model_type = config->model_type();
  m.arch = find_architecture_for_model_type(m.model_type);
  if (m.arch == nullptr) {
    std::vector<std::string_view> types;
    for (std::string_view name : architecture_names())
      for (std::string_view t : find_architecture(name)->hf_model_types) types.push_back(t);
    return make_error(ErrorCode::Unsupported,
                      fmt::format("hf: {}: model_type '{}' is not supported (supported: {})", dir.string(),
                                  m.model_type, fmt::join(types, ", ")));
  }
  const HfAdapter* adapter = find_hf_adapter(m.arch->name);
  if (adapter == nullptr)
    return make_error(ErrorCode::Unsupported,
                      fmt::format("hf: {}: model_type '{}' (architecture {}) loads from GGUF only so far: "
                                  "it has no config.json mapping yet",
                                  dir.string(), m.model_type, m.arch->name));
  // The config's sizes against the checkpoint before the adapter allocates from them.
  uint64_t max_elements = 0;
  for (const auto& [name, t] : checkpoint->tensors()) {
    uint64_t n = 1;
    for (int64_t d : t->shape)
      if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) n = UINT64_MAX;
    max_elements = std::max(max_elements, n);
  }
  if (auto st = check_hf_config_fits(*config, max_elements, checkpoint->tensors().size()); !st)
    return st.error();
  HfNormalized norm;
  if (auto st = adapter->normalize(*config, norm); !st) return st.error();
  if (!norm.metadata.has("general.architecture")) norm.metadata.string("general.architecture", m.arch->name);
  auto eos = config->eos_token_ids();
  if (!eos) return eos.error();
  for (int64_t id : *eos) {
    if (id < 0 || id > INT32_MAX)
      return make_error(ErrorCode::InvalidFile,
                        fmt::format("hf: {}: eos_token_id {} is out of range", dir.string(), id));
    m.eog_ids.push_back(static_cast<int32_t>(id));
  }
  auto bos = config->bos_token_id();
  if (!bos) return bos.error();
  if (*bos && **bos >= 0 && **bos <= INT32_MAX && !norm.metadata.has("tokenizer.ggml.bos_token_id"))
    norm.metadata.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(**bos));
  if (!m.eog_ids.empty() && !norm.metadata.has("tokenizer.ggml.eos_token_id"))
    norm.metadata.u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(m.eog_ids.front()));
  auto meta = norm.metadata.build((dir / "config.json").string());
  if (!meta) return meta.error();
  m.metadata.emplace(std::move(*meta));

  auto storage = std::make_shared<Storage>(Storage{std::move(*checkpoint), std::move(norm.derived)});
  m.file_bytes = storage->checkpoint.file_bytes();
  for (const formats::SafetensorsFile& shard : storage->checkpoint.shards())
    m.mappings.push_back(shard.mapping());
  auto weights = bind_hf_tensors(storage->checkpoint.tensors(), adapter->tensors, norm.n_layers,
                                 norm.tied_embeddings, "hf: " + dir.string());
  if (!weights) return weights.error();
  m.weights = std::move(*weights);
  for (const HfDerivedTensor& d : storage->derived) {
    const auto [it, fresh] =
        m.weights.emplace(d.name, WeightInfo{d.shape, graph::DType::F32, d.values.data()});
    if (!fresh)
      return make_error(ErrorCode::InvalidFile,
                        fmt::format("hf: {}: tensor '{}' is both computed from config.json and stored in the "
                                    "checkpoint",
                                    dir.string(), d.name));
  }
  m.storage = std::move(storage);
  return m;
}

}  // namespace glass::models
