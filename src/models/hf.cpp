// HF checkpoint loading: config -> GGUF metadata through the family's adapter, safetensors ->
// WeightIndex through its name table (models/hf.h).
#include "models/hf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "formats/half.h"
#include "formats/quant.h"
#include "formats/safetensors_checkpoint.h"
#include "models/hf_mlx.h"
#include "models/hparam_bounds.h"

namespace glass::models {
namespace {

// A name pattern: literal pieces around placeholders, "{}" (the layer) and "{e}" (the index of a
// stacked part).
struct Pattern {
  std::vector<std::string_view> pieces;  // one more than slots
  std::vector<char> slots;               // 'l' layer, 'e' stack index
  bool has(char slot) const { return std::find(slots.begin(), slots.end(), slot) != slots.end(); }
};

Pattern parse(std::string_view p) {
  Pattern out;
  size_t start = 0;
  for (;;) {
    const size_t layer = p.find("{}", start), index = p.find("{e}", start);
    const size_t at = std::min(layer, index);
    if (at == std::string_view::npos) {
      out.pieces.push_back(p.substr(start));
      return out;
    }
    out.pieces.push_back(p.substr(start, at - start));
    out.slots.push_back(at == layer ? 'l' : 'e');
    start = at + (at == layer ? 2 : 3);
  }
}

// Whether `name` matches: every placeholder a decimal without leading zeros. `layer` / `index`
// are -1 where the pattern has no such placeholder.
bool match(std::string_view name, const Pattern& p, int64_t& layer, int64_t& index) {
  layer = index = -1;
  if (!name.starts_with(p.pieces.front())) return false;
  name.remove_prefix(p.pieces.front().size());
  for (size_t i = 0; i < p.slots.size(); ++i) {
    size_t n = 0;
    while (n < name.size() && name[n] >= '0' && name[n] <= '9') ++n;
    if (n == 0 || n > 9 || (n > 1 && name.front() == '0')) return false;
    int64_t v = 0;
    for (size_t d = 0; d < n; ++d) v = v * 10 + (name[d] - '0');
    (p.slots[i] == 'l' ? layer : index) = v;
    name.remove_prefix(n);
    if (!name.starts_with(p.pieces[i + 1])) return false;
    name.remove_prefix(p.pieces[i + 1].size());
  }
  return name.empty();
}

std::string with_layer(std::string_view pattern, int64_t layer, int64_t index = 0) {
  const Pattern p = parse(pattern);
  std::string out(p.pieces.front());
  for (size_t i = 0; i < p.slots.size(); ++i)
    out += fmt::format("{}{}", p.slots[i] == 'l' ? layer : index, p.pieces[i + 1]);
  return out;
}

uint64_t elements(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// 1 + w (HfTransform::AddOne) or -exp(w) (NegExp) as F32.
WeightInfo transformed(const formats::SafetensorsTensor& t, HfTransform how, HfOwnedTensors& owned) {
  const uint64_t n = elements(t.shape);
  std::vector<std::byte>& buf = owned.buffers.emplace_back(n * sizeof(float));
  auto* out = reinterpret_cast<float*>(buf.data());
  for (uint64_t i = 0; i < n; ++i) {
    const float w = formats::float_element(t, i);
    out[i] = how == HfTransform::NegExp ? -std::exp(w) : w + 1.0f;
  }
  return WeightInfo{t.shape, graph::DType::F32, buf.data()};
}

bool starts_with_any(std::string_view name, std::span<const std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (name.starts_with(p)) return true;
  return false;
}

// What llama.cpp's converter writes as F32 whatever the checkpoint's dtype: 1-D tensors and norms
// (conversion/base.py), MoE routers and convolution taps; the graphs read them as F32 from GGUF
// files, so an F16 / BF16 checkpoint's are widened at load (small: vectors and [dim, L] taps).
bool converter_keeps_f32(std::string_view gguf, const WeightInfo& w) {
  return w.shape.size() <= 1 || gguf.ends_with("_norm.weight") || gguf.ends_with(".shortconv.conv.weight") ||
         gguf.ends_with(".ssm_conv1d.weight") || gguf.ends_with(".ffn_gate_inp.weight");
}

WeightInfo widened(const WeightInfo& w, HfOwnedTensors& owned) {
  const uint64_t n = elements(w.shape);
  std::vector<std::byte>& buf = owned.buffers.emplace_back(n * sizeof(float));
  (void)formats::dequantize_row(w.dtype, w.data, reinterpret_cast<float*>(buf.data()),
                                static_cast<int64_t>(n));  // F16 / BF16: checked by computes_with
  return WeightInfo{w.shape, graph::DType::F32, buf.data()};
}

// Q4_1 and Q8_A: what MLX triplets become at load (hf_mlx.h); no safetensors dtype names them.
bool computes_with(graph::DType t) {
  return t == graph::DType::F32 || t == graph::DType::F16 || t == graph::DType::BF16 ||
         t == graph::DType::Q4_1 || t == graph::DType::Q8_A;
}

// The safetensors storage and the derived tensors, kept alive together by the model.
struct Storage {
  formats::SafetensorsCheckpoint checkpoint;
  std::vector<HfDerivedTensor> derived;
  HfOwnedTensors owned;
};

}  // namespace

const HfAdapter* find_hf_adapter(std::string_view architecture) {
  const Architecture* a = find_architecture(architecture);
  return a == nullptr ? nullptr : a->hf;
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

namespace {

struct BindInput {
  std::span<const HfTensorName> table;
  std::span<const HfRename> renames;
  std::span<const std::string_view> skipped;
};

Result<WeightIndex> bind_table(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors, const BindInput& in,
    int64_t n_layers, bool tied, std::string_view where, HfOwnedTensors* owned) {
  // Each layer needs at least one tensor, so a layer count beyond the tensor count is wrong; the
  // bound also keeps the enumeration of expected names proportional to the checkpoint.
  if (n_layers < 0 || static_cast<uint64_t>(n_layers) > tensors.size())
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: the config says {} layers but the checkpoint holds {} tensors", where,
                                  n_layers, tensors.size()));
  std::vector<Pattern> patterns;
  for (const HfTensorName& r : in.table) patterns.push_back(parse(r.hf));
  WeightIndex out;
  std::vector<std::string> unexpected, unusable;
  std::set<std::pair<size_t, int64_t>> bound;  // (row, layer) seen
  // Stacked rows: (row, layer) -> parts by index.
  std::map<std::pair<size_t, int64_t>, std::map<int64_t, const formats::SafetensorsTensor*>> stacks;
  for (const auto& [name, t] : tensors) {
    if (starts_with_any(name, in.skipped)) continue;
    std::string canonical = name;
    for (const HfRename& r : in.renames)
      if (name.starts_with(r.from)) {
        canonical = std::string(r.to) + name.substr(r.from.size());
        break;
      }
    size_t row = in.table.size();
    int64_t layer = -1, index = -1;
    for (size_t r = 0; r < in.table.size(); ++r)
      if (match(canonical, patterns[r], layer, index)) {
        row = r;
        break;
      }
    if (row == in.table.size() || layer >= n_layers) {
      unexpected.push_back(name);
      continue;
    }
    const HfTensorName& r = in.table[row];
    if (r.role == HfRole::Ignored || (r.role == HfRole::Output && tied)) continue;
    if (!t->graph_dtype || !computes_with(*t->graph_dtype)) {
      unusable.push_back(fmt::format("'{}' ({})", name, t->dtype));
      bound.insert({row, layer});  // present, if unusable: not also missing
      continue;
    }
    const bool stacked = patterns[row].has('e');
    const bool computed = r.transform == HfTransform::AddOne || r.transform == HfTransform::NegExp;
    if ((stacked || computed) && owned == nullptr)
      return make_error(
          ErrorCode::Internal,
          fmt::format("{}: tensor '{}' must be built at load but no storage was given", where, name));
    if (stacked) {
      if (!stacks[{row, layer}].emplace(index, t).second) unexpected.push_back(name + " (twice)");
      continue;
    }
    const std::string gguf = with_layer(r.gguf, layer);
    WeightInfo info =
        computed ? transformed(*t, r.transform, *owned) : WeightInfo{t->shape, *t->graph_dtype, t->data};
    if (r.transform == HfTransform::DropUnitAxes) std::erase(info.shape, int64_t{1});
    if (!out.emplace(gguf, info).second) unexpected.push_back(name + " (a second '" + gguf + "')");
    bound.insert({row, layer});
  }
  std::vector<std::string> missing;
  for (const auto& [key, parts] : stacks) {
    const HfTensorName& r = in.table[key.first];
    const formats::SafetensorsTensor& first = *parts.begin()->second;
    bound.insert(key);
    for (int64_t i = 0; i <= parts.rbegin()->first; ++i)
      if (!parts.contains(i)) missing.push_back(with_layer(r.hf, key.second, i));
    if (!missing.empty()) continue;
    for (const auto& [i, t] : parts)
      if (t->shape != first.shape || t->dtype != first.dtype)
        return make_error(ErrorCode::InvalidFile,
                          fmt::format("{}: tensor '{}' ({} {}) cannot be stacked with '{}' ({} {})", where,
                                      t->name, t->dtype, fmt::join(t->shape, "x"), first.name, first.dtype,
                                      fmt::join(first.shape, "x")));
    // The parts one after another: [n, ...part shape], in the parts' dtype.
    std::vector<int64_t> shape{static_cast<int64_t>(parts.size())};
    shape.insert(shape.end(), first.shape.begin(), first.shape.end());
    std::vector<std::byte>& buf = owned->buffers.emplace_back(first.nbytes * parts.size());
    size_t at = 0;
    for (const auto& [i, t] : parts) {
      std::memcpy(buf.data() + at, t->data, t->nbytes);
      at += t->nbytes;
    }
    out.emplace(with_layer(r.gguf, key.second), WeightInfo{shape, *first.graph_dtype, buf.data()});
  }
  for (size_t row = 0; row < in.table.size(); ++row) {
    const HfTensorName& r = in.table[row];
    if (r.role != HfRole::Required && !(r.role == HfRole::Output && !tied)) continue;
    const bool per_layer = patterns[row].has('l');
    for (int64_t i = 0; i < (per_layer ? n_layers : 1); ++i)
      if (!bound.contains({row, per_layer ? i : -1})) missing.push_back(with_layer(r.hf, i));
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
                      fmt::format("{}: tensors in a dtype glass does not compute with (F32, F16, BF16, MLX "
                                  "4-bit): {}",
                                  where, fmt::join(unusable, ", ")));
  for (auto& [gguf, w] : out) {
    if ((w.dtype != graph::DType::F16 && w.dtype != graph::DType::BF16) || !converter_keeps_f32(gguf, w))
      continue;
    if (owned == nullptr)
      return make_error(
          ErrorCode::Internal,
          fmt::format("{}: tensor '{}' must be widened at load but no storage was given", where, gguf));
    w = widened(w, *owned);
  }
  return out;
}

}  // namespace

Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    std::span<const HfTensorName> table, int64_t n_layers, bool tied, std::string_view where,
    HfOwnedTensors* owned) {
  return bind_table(tensors, BindInput{table, {}, {}}, n_layers, tied, where, owned);
}

Result<WeightIndex> bind_hf_tensors(
    const std::map<std::string, const formats::SafetensorsTensor*, std::less<>>& tensors,
    const HfAdapter& adapter, int64_t n_layers, bool tied, std::string_view where, HfOwnedTensors& owned) {
  return bind_table(tensors, BindInput{adapter.tensors, adapter.renames, adapter.skipped}, n_layers, tied,
                    where, &owned);
}

Result<formats::HfObject> hf_text_config(const formats::HfConfig& config) {
  const formats::HfObject c = config.config();
  auto text = c.object("text_config");
  if (!text) return text.error();
  return *text ? **text : c;
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

  auto storage = std::make_shared<Storage>(Storage{std::move(*checkpoint), std::move(norm.derived), {}});
  m.file_bytes = storage->checkpoint.file_bytes();
  for (const formats::SafetensorsFile& shard : storage->checkpoint.shards())
    m.mappings.push_back(shard.mapping());
  const std::string where = "hf: " + dir.string();
  SafetensorsTensors tensors = storage->checkpoint.tensors();
  if (const auto& mlx = config->mlx_quantization()) {
    // Each triplet is read once into its converted copy: its pages leave memory then, as a repacked
    // GGUF weight's do (else an MLX snapshot takes its size twice).
    auto q = mlx_to_glass(tensors, *mlx, storage->owned, where, [&m](const formats::SafetensorsTensor& t) {
      for (const auto& mapping : m.mappings) mapping->release(t.data, t.nbytes);
    });
    if (!q) return q.error();
    tensors = std::move(*q);
  }
  auto weights =
      bind_hf_tensors(tensors, *adapter, norm.n_layers, norm.tied_embeddings, where, storage->owned);
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
