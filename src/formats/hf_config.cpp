#include "formats/hf_config.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/read_file.h"

namespace glass::formats {
namespace {

// Bounded and regular files only (core/read_file.h): a FIFO or /dev/zero named config.json is
// refused, not read forever.
Result<std::string> read_text(const std::filesystem::path& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "hf");
}

// A short rendering of an offending value for messages.
std::string shown(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

}  // namespace

Error HfObject::error(std::string_view key, std::string_view what) const {
  return make_error(ErrorCode::InvalidFile, fmt::format("{}: {}: {}", where_, key, what));
}

const Json* HfObject::find(std::string_view key) const {
  if (j_ == nullptr || !j_->is_object()) return nullptr;
  const auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return nullptr;
  return &*it;
}

Result<int64_t> HfObject::get_int(std::string_view key, std::optional<int64_t> fallback) const {
  const Json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is missing");
  }
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return error(key, fmt::format("{} is out of range", shown(*v)));
  if (!v->is_number_integer()) return error(key, fmt::format("expected an integer, got {}", shown(*v)));
  return v->get<int64_t>();
}

Result<double> HfObject::get_float(std::string_view key, std::optional<double> fallback) const {
  const Json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is missing");
  }
  if (!v->is_number()) return error(key, fmt::format("expected a number, got {}", shown(*v)));
  const double d = v->get<double>();
  if (!std::isfinite(d)) return error(key, "is not finite");
  return d;
}

Result<bool> HfObject::get_bool(std::string_view key, std::optional<bool> fallback) const {
  const Json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is missing");
  }
  if (!v->is_boolean()) return error(key, fmt::format("expected true or false, got {}", shown(*v)));
  return v->get<bool>();
}

Result<std::string> HfObject::get_string(std::string_view key, std::optional<std::string> fallback) const {
  const Json* v = find(key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is missing");
  }
  if (!v->is_string()) return error(key, fmt::format("expected a string, got {}", shown(*v)));
  return v->get<std::string>();
}

Result<std::optional<HfObject>> HfObject::object(std::string_view key) const {
  const Json* v = find(key);
  if (v == nullptr) return std::optional<HfObject>();
  if (!v->is_object()) return error(key, fmt::format("expected an object, got {}", shown(*v)));
  return std::optional<HfObject>(HfObject(v, fmt::format("{}: {}", where_, key)));
}

Result<std::vector<int64_t>> HfObject::int_list(std::string_view key) const {
  const Json* v = find(key);
  std::vector<int64_t> out;
  if (v == nullptr) return out;
  const bool list = v->is_array();
  const size_t n = list ? v->size() : 1;
  for (size_t i = 0; i < n; ++i) {
    const Json& e = list ? (*v)[i] : *v;
    if (!e.is_number_integer() || (e.is_number_unsigned() && e.get<uint64_t>() > (1ull << 62)))
      return error(key, fmt::format("expected an integer or a list of integers, got {}", shown(*v)));
    out.push_back(e.get<int64_t>());
  }
  return out;
}

namespace {

// config.json's "quantization" (mlx-lm) or "quantization_config" (transformers' name for any
// method): MLX affine 4- and 8-bit is read; any other method is refused by name.
Result<std::optional<MlxQuantization>> read_quantization(const HfObject& root, const std::string& where) {
  const Json* q = root.find("quantization");
  const char* key = "quantization";
  if (q == nullptr) {
    q = root.find("quantization_config");
    key = "quantization_config";
  }
  if (q == nullptr) return std::optional<MlxQuantization>();
  const bool mlx =
      q->is_object() && !q->contains("quant_method") && q->contains("bits") && q->contains("group_size");
  if (!mlx) {
    const std::string method =
        q->is_object() && q->contains("quant_method") ? shown((*q)["quant_method"]) : shown(*q);
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("{}: quantized HF checkpoints ({}, quant_method {}) are not supported (MLX "
                    "affine 4- and 8-bit snapshots are); use the unquantized weights or a GGUF file",
                    where, key, method));
  }
  const HfObject o(q, fmt::format("{}: {}", where, key));
  auto group = o.get_int("group_size");
  if (!group) return group.error();
  auto bits = o.get_int("bits");
  if (!bits) return bits.error();
  auto mode = o.get_string("mode", "affine");
  if (!mode) return mode.error();
  if (*mode != "affine")
    return make_error(ErrorCode::Unsupported,
                      fmt::format("{}: {}: MLX mode \"{}\" is not supported (affine is)", where, key, *mode));
  if (*group != 32 && *group != 64 && *group != 128)
    return o.error("group_size", fmt::format("expected 32, 64 or 128, got {}", *group));
  if (*bits != 4 && *bits != 8)
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("{}: {}: MLX {}-bit weights are not supported (4 and 8 bits are)", where, key, *bits));
  MlxQuantization out{.group_size = *group, .bits = *bits, .modules = {}};
  for (const auto& [module, v] : q->items()) {
    if (module == "group_size" || module == "bits" || module == "mode") continue;
    if (v.is_boolean() && !v.get<bool>()) {
      out.modules[module] = {};
      continue;
    }
    if (!v.is_object()) continue;  // other settings mlx-lm may add
    const HfObject m(&v, fmt::format("{}: {}: {}", where, key, module));
    auto g = m.get_int("group_size", *group);
    if (!g) return g.error();
    auto b = m.get_int("bits", *bits);
    if (!b) return b.error();
    out.modules[module] = {*g, *b};
  }
  return std::optional<MlxQuantization>(std::move(out));
}

}  // namespace

Result<HfConfig> HfConfig::open(const std::filesystem::path& dir) {
  auto config = read_text(dir / "config.json");
  if (!config) return config.error();
  std::string generation;
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir / "generation_config.json", ec)) {
    auto g = read_text(dir / "generation_config.json");
    if (!g) return g.error();
    generation = std::move(*g);
  }
  return parse(*config, generation, dir.string());
}

Result<HfConfig> HfConfig::parse(std::string_view config_json, std::string_view generation_json,
                                 const std::string& dir) {
  HfConfig c;
  c.config_where_ = (std::filesystem::path(dir) / "config.json").string();
  c.generation_where_ = (std::filesystem::path(dir) / "generation_config.json").string();
  auto j = parse_json_strict(config_json, c.config_where_);
  if (!j) return j.error();
  if (!j->is_object()) return make_error(ErrorCode::InvalidFile, c.config_where_ + ": not a JSON object");
  c.config_ = std::move(*j);
  if (!generation_json.empty()) {
    auto g = parse_json_strict(generation_json, c.generation_where_);
    if (!g) return g.error();
    if (!g->is_object())
      return make_error(ErrorCode::InvalidFile, c.generation_where_ + ": not a JSON object");
    c.generation_ = std::move(*g);
  }
  const HfObject root = c.config();
  if (const Json* auto_map = root.find("auto_map"))
    return make_error(ErrorCode::Unsupported,
                      fmt::format("{}: auto_map {} points at custom model code; glass runs only its own "
                                  "architecture definitions and never executes code from a checkpoint "
                                  "(there is no trust_remote_code)",
                                  c.config_where_, shown(*auto_map)));
  auto mlx = read_quantization(root, c.config_where_);
  if (!mlx) return mlx.error();
  c.mlx_ = *mlx;
  auto type = root.get_string("model_type");
  if (!type) return type.error();
  c.model_type_ = std::move(*type);
  return c;
}

Result<std::vector<int64_t>> HfConfig::eos_token_ids() const {
  if (generation().has("eos_token_id")) return generation().int_list("eos_token_id");
  return config().int_list("eos_token_id");
}

Result<std::optional<int64_t>> HfConfig::bos_token_id() const {
  const HfObject src = generation().has("bos_token_id") ? generation() : config();
  if (!src.has("bos_token_id")) return std::optional<int64_t>();
  auto v = src.get_int("bos_token_id");
  if (!v) return v.error();
  return std::optional<int64_t>(*v);
}

}  // namespace glass::formats
