#pragma once
// config.json values written as the GGUF metadata keys a family's from_gguf reads (what llama.cpp's
// convert_hf_to_gguf.py writes): the pieces every HF adapter shares. Errors name config.json and
// the key, so a bad value is reported in the terms of the file the user has.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf_metadata.h"
#include "formats/hf_config.h"
#include "glass/result.h"

namespace glass::models {

class HfKeys {
 public:
  HfKeys(formats::HfObject c, std::string arch, formats::GgufMetadataBuilder& m)
      : c_(std::move(c)), arch_(std::move(arch)), m_(m) {}

  const formats::HfObject& config() const { return c_; }
  formats::GgufMetadataBuilder& metadata() { return m_; }
  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  // A positive integer below 2^31, written as u32 <arch>.<gguf> (when `gguf` is not empty).
  Result<int64_t> count(std::string_view hf, std::string_view gguf, std::optional<int64_t> fallback = {});
  // A positive number, written as f32.
  Result<double> positive(std::string_view hf, std::string_view gguf, std::optional<double> fallback = {});
  // A number >= 0 written as f32 when config.json has it (absent or null: nothing written).
  Result<std::optional<double>> optional_cap(std::string_view hf, std::string_view gguf);

  // `hf` (default `fallback`) must be one of `allowed`: else Unsupported naming the key.
  Status require_one_of(std::string_view hf, std::string_view fallback,
                        std::initializer_list<std::string_view> allowed, std::string_view why);
  // A boolean that must have the value `expected` (default `fallback`).
  Status require_bool(std::string_view hf, bool fallback, bool expected, std::string_view why);
  Error unsupported(std::string_view hf, std::string_view what) const;

 private:
  formats::HfObject c_;
  std::string arch_;
  formats::GgufMetadataBuilder& m_;
};

// What the decoder families share, read and written: block_count (num_hidden_layers),
// context_length (max_position_embeddings), embedding_length (hidden_size), feed_forward_length
// (intermediate_size, when `ffn`), attention.head_count(_kv), layer_norm_rms_epsilon,
// key_length / value_length (head_dim, when present), rope.freq_base (rope_theta, also inside
// rope_parameters), and linear RoPE scaling (rope_scaling / rope_parameters; other types refused).
struct HfDecoderShape {
  int64_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0;
};
struct HfDecoderDefaults {
  std::optional<int64_t> max_positions;  // max_position_embeddings when absent
  std::optional<double> rms_eps;
  std::optional<int64_t> head_dim;  // written as key_length even when config.json lacks it
  double rope_theta = 10000.0;
  bool ffn = true;
};
Result<HfDecoderShape> hf_decoder_keys(HfKeys& k, const HfDecoderDefaults& d);

// The RoPE base of one kind of layer: `hf` at the top level, else rope_parameters[kind].rope_theta
// (transformers 5), else rope_parameters.rope_theta; `fallback` when none has it.
Result<double> hf_rope_theta(const formats::HfObject& c, std::string_view hf, std::string_view kind,
                             double fallback);

// The RoPE type of a rope_scaling / rope_parameters object: "rope_type", else the older "type",
// else "default".
Result<std::string> hf_rope_type(const formats::HfObject& r);

// Which layers are local (sliding window), from layer_types ("sliding_attention" /
// "full_attention") or a period `pattern_key` (layer i is local iff i % n < n - 1), else the
// period `default_period`.
Result<std::vector<bool>> hf_sliding_layers(const formats::HfObject& c, int64_t n_layers,
                                            std::string_view pattern_key, int64_t default_period);
// Writes <arch>.attention.sliding_window_pattern: a period when the layers follow one (as
// llama.cpp reads it), else one bool per layer.
void put_sliding_pattern(HfKeys& k, const std::vector<bool>& local);

// The standard normal quantile (the inverse of its CDF) at p in (0, 1).
double normal_quantile(double p);

}  // namespace glass::models
