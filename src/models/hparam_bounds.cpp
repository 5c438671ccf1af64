#include "models/hparam_bounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>

namespace glass::models {
namespace {

// Keys whose values size a weight (its rows, its columns, or a factor of them).
constexpr std::array<std::string_view, 21> kSizeKeys = {
    "embedding_length",
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "attention.key_length",
    "attention.value_length",
    "vocab_size",
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
    "rope.dimension_count",
    "embedding_length_per_layer_input",
    "shortconv.l_cache",
    "ssm.conv_kernel",
    "ssm.inner_size",
    "ssm.state_size",
    "ssm.time_step_rank",
    "ssm.group_count",
    // Gemma 4's local layers
    "attention.key_length_swa",
    "attention.value_length_swa",
    "rope.dimension_count_swa",
};

// The largest integer in a scalar or an integer array value; nullopt for other types. Negative
// values are the readers' to refuse.
std::optional<uint64_t> largest(const formats::GgufValue& v) {
  using T = formats::GgufValueType;
  auto scalar = [](const formats::GgufValue& s) -> std::optional<uint64_t> {
    switch (s.type) {
      case T::U8:
      case T::U16:
      case T::U32:
      case T::U64:
        return s.u64;
      case T::I8:
      case T::I16:
      case T::I32:
      case T::I64:
        return s.i64 < 0 ? 0 : static_cast<uint64_t>(s.i64);
      default:
        return std::nullopt;
    }
  };
  if (v.type != T::ARRAY) return scalar(v);
  if (v.elem_type == T::ARRAY || v.elem_type == T::STRING) return std::nullopt;
  std::optional<uint64_t> best;
  for (uint64_t i = 0; i < v.count; ++i)
    if (auto e = scalar(v.element(i))) best = std::max(best.value_or(0), *e);
  return best;
}

Error too_big(const formats::GgufFile& file, const std::string& key, uint64_t value,
              const std::string& what) {
  return make_error(ErrorCode::InvalidFile,
                    fmt::format("model: {}: {} = {} is impossible: {}", file.path(), key, value, what));
}

}  // namespace

Status check_hparams_fit_file(const formats::GgufFile& file, const WeightIndex& weights,
                              std::string_view arch) {
  uint64_t max_elements = 0;
  for (const auto& [name, w] : weights) {
    uint64_t n = 1;
    for (int64_t d : w.shape)
      if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) n = UINT64_MAX;
    max_elements = std::max(max_elements, n);
  }
  const std::string prefix = std::string(arch) + ".";
  if (const formats::GgufValue* v = file.find(prefix + "block_count")) {
    if (auto n = largest(*v); n && *n > 0) {
      if (*n > weights.size())
        return too_big(file, prefix + "block_count", *n,
                       fmt::format("the file has {} tensors, fewer than one per layer", weights.size()));
      const std::string last = fmt::format("blk.{}.", *n - 1);
      const auto it = weights.lower_bound(last);
      if (it == weights.end() || !it->first.starts_with(last))
        return too_big(file, prefix + "block_count", *n,
                       fmt::format("no tensor of layer {} ({}*)", *n - 1, last));
    }
  }
  uint64_t heads = 0, key_length = 0;
  for (std::string_view k : kSizeKeys) {
    const std::string key = prefix + std::string(k);
    const formats::GgufValue* v = file.find(key);
    if (v == nullptr) continue;
    const auto n = largest(*v);
    if (!n) continue;
    if (*n > max_elements)
      return too_big(file, key, *n, fmt::format("the largest tensor has {} elements", max_elements));
    if (k == "attention.head_count") heads = *n;
    if (k == "attention.key_length" || k == "attention.key_length_swa") key_length = std::max(key_length, *n);
  }
  // q rows = heads x head_dim: both fit alone, their product must too (and must not overflow).
  if (heads > 0 && key_length > 0 && (heads > max_elements / key_length))
    return too_big(file, prefix + "attention.head_count", heads,
                   fmt::format("with {}attention.key_length = {} the query projection exceeds the largest "
                               "tensor ({} elements)",
                               prefix, key_length, max_elements));
  return {};
}

Status check_hf_config_fits(const formats::HfConfig& config, uint64_t max_tensor_elements,
                            uint64_t n_tensors) {
  if (Status s = check_hf_config_fits(config.config(), max_tensor_elements, n_tensors); !s.ok()) return s;
  // A multimodal config's text model, whose keys the adapter reads.
  auto text = config.config().object("text_config");
  if (!text) return text.error();
  if (*text) return check_hf_config_fits(**text, max_tensor_elements, n_tensors);
  return {};
}

Status check_hf_config_fits(const formats::HfObject& c, uint64_t max_tensor_elements, uint64_t n_tensors) {
  auto value = [&](std::string_view key) -> std::optional<uint64_t> {
    if (!c.has(key)) return std::nullopt;
    auto v = c.get_int(key);
    if (!v || *v < 0) return std::nullopt;
    return static_cast<uint64_t>(*v);
  };
  if (auto n = value("num_hidden_layers"); n && *n > n_tensors)
    return c.error("num_hidden_layers",
                   fmt::format("{} layers is impossible: the checkpoint has {} tensors", *n, n_tensors));
  for (std::string_view key :
       {"hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads", "head_dim",
        "vocab_size", "moe_intermediate_size", "num_experts", "num_local_experts", "num_experts_per_tok"}) {
    if (auto n = value(key); n && *n > max_tensor_elements)
      return c.error(key, fmt::format("{} is impossible: the checkpoint's largest tensor has {} elements", *n,
                                      max_tensor_elements));
  }
  return {};
}

}  // namespace glass::models
