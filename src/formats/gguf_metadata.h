#pragma once
// GGUF metadata built in memory: a GgufFile with keys and no tensors, for model sources that are
// not GGUF files (an HF config.json normalised to the `llama.*` / `tokenizer.ggml.*` keys the
// architectures read). The keys are serialised as a GGUF v3 image and parsed by GgufFile::parse,
// so every getter and check behaves exactly as for a file.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/gguf.h"
#include "glass/result.h"

namespace glass::formats {

class GgufMetadataBuilder {
 public:
  GgufMetadataBuilder& u32(std::string_view key, uint32_t v);
  GgufMetadataBuilder& f32(std::string_view key, float v);
  GgufMetadataBuilder& boolean(std::string_view key, bool v);
  GgufMetadataBuilder& string(std::string_view key, std::string_view v);
  GgufMetadataBuilder& i32_array(std::string_view key, const std::vector<int32_t>& v);
  GgufMetadataBuilder& f32_array(std::string_view key, const std::vector<float>& v);
  GgufMetadataBuilder& bool_array(std::string_view key, const std::vector<bool>& v);
  GgufMetadataBuilder& string_array(std::string_view key, const std::vector<std::string>& v);
  // Any value as GgufFile returns it (a key copied from another file): scalars at their width,
  // strings, arrays (nested ones too).
  GgufMetadataBuilder& value(std::string_view key, const GgufValue& v);
  bool has(std::string_view key) const;

  // `name` stands in for the file path in the GgufFile's messages ("dir/config.json").
  // A key added twice is an InvalidFile error from the parser, naming it.
  Result<GgufFile> build(std::string name) const;
  // The key/value records as a GGUF v3 file holds them after its counts, and how many: for a writer
  // that adds them to its own header.
  const std::vector<uint8_t>& records() const { return kv_; }
  size_t size() const { return keys_.size(); }

 private:
  void key(std::string_view k, uint32_t type);
  void raw(const void* p, size_t n);
  void payload(const GgufValue& v);  // what follows the type id
  std::vector<uint8_t> kv_;
  std::vector<std::string> keys_;
};

}  // namespace glass::formats
