#pragma once
// An HF checkpoint's config.json (and generation_config.json when present), with typed getters
// whose errors name the file and the key ("config.json: num_key_value_heads: expected an integer,
// got \"4\""). Which keys mean what is each architecture's business (models/*_hf.cpp); this reader
// only enforces what holds for every model: model_type is present, a config whose auto_map points at
// custom code is refused (glass runs its own architecture definitions only and never executes code
// shipped with a checkpoint: there is no trust_remote_code), and so is a quantization other than
// MLX's affine 4- and 8-bit (mlx-community snapshots; GPTQ, AWQ, bitsandbytes... are named and refused).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/json_strict.h"
#include "glass/result.h"

namespace glass::formats {

// One JSON object of a config, for typed look-ups. A key that is absent or null takes the
// fallback; without a fallback it is an InvalidFile error.
class HfObject {
 public:
  HfObject(const Json* j, std::string where) : j_(j), where_(std::move(where)) {}

  const Json* find(std::string_view key) const;  // nullptr when absent or null
  bool has(std::string_view key) const { return find(key) != nullptr; }
  Result<int64_t> get_int(std::string_view key, std::optional<int64_t> fallback = std::nullopt) const;
  Result<double> get_float(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  Result<bool> get_bool(std::string_view key, std::optional<bool> fallback = std::nullopt) const;
  Result<std::string> get_string(std::string_view key,
                                 std::optional<std::string> fallback = std::nullopt) const;
  // A nested object (rope_scaling); nullopt when absent or null, an error when not an object.
  Result<std::optional<HfObject>> object(std::string_view key) const;
  // An integer or a list of integers (eos_token_id); empty when absent or null.
  Result<std::vector<int64_t>> int_list(std::string_view key) const;
  Error error(std::string_view key, std::string_view what) const;
  const std::string& where() const { return where_; }

 private:
  const Json* j_;
  std::string where_;  // "dir/config.json"
};

// MLX's affine quantization as mlx-lm writes it: config.json "quantization" (and the same object as
// "quantization_config") {"group_size": G, "bits": B[, "mode": "affine"], "MODULE": {"group_size": G2,
// "bits": B2} | false, ...}: mixed recipes give some modules other sizes, or none.
struct MlxQuantization {
  struct Module {
    int64_t group_size = 0;
    int64_t bits = 0;  // 0: the module is not quantized
  };
  int64_t group_size = 0;                              // 32, 64 or 128
  int64_t bits = 0;                                    // 4
  std::map<std::string, Module, std::less<>> modules;  // by module path ("model.layers.0.mlp.down_proj")
};

class HfConfig {
 public:
  // Reads dir/config.json and, when present, dir/generation_config.json.
  static Result<HfConfig> open(const std::filesystem::path& dir);
  // The same from text; generation_json may be empty. `dir` names the source in messages.
  static Result<HfConfig> parse(std::string_view config_json, std::string_view generation_json,
                                const std::string& dir);

  const std::string& model_type() const { return model_type_; }
  HfObject config() const { return HfObject(&config_, config_where_); }
  // generation_config.json when present (else an empty object).
  HfObject generation() const { return HfObject(&generation_, generation_where_); }

  // BOS / EOS ids as generation does: generation_config.json's when it has the key, else
  // config.json's. EOS may be a list (Llama 3: end_of_text, eom, eot); empty when neither has it.
  Result<std::vector<int64_t>> eos_token_ids() const;
  Result<std::optional<int64_t>> bos_token_id() const;
  // The checkpoint's MLX quantization; nullopt when its weights are not quantized.
  const std::optional<MlxQuantization>& mlx_quantization() const { return mlx_; }

 private:
  Json config_;
  Json generation_ = Json::object();
  std::string config_where_, generation_where_;
  std::string model_type_;
  std::optional<MlxQuantization> mlx_;
};

}  // namespace glass::formats
