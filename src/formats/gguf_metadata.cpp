// Serialises metadata as GGUF v3: "GGUF" | u32 version | u64 n_tensors (0) | u64 n_kv | KVs.
#include "formats/gguf_metadata.h"

#include <algorithm>
#include <cstring>

namespace glass::formats {

void GgufMetadataBuilder::raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  kv_.insert(kv_.end(), b, b + n);
}

void GgufMetadataBuilder::key(std::string_view k, uint32_t type) {
  const uint64_t len = k.size();
  raw(&len, 8);
  raw(k.data(), k.size());
  raw(&type, 4);
  keys_.emplace_back(k);
}

GgufMetadataBuilder& GgufMetadataBuilder::u32(std::string_view k, uint32_t v) {
  key(k, static_cast<uint32_t>(GgufValueType::U32));
  raw(&v, 4);
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::f32(std::string_view k, float v) {
  key(k, static_cast<uint32_t>(GgufValueType::F32));
  raw(&v, 4);
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::boolean(std::string_view k, bool v) {
  key(k, static_cast<uint32_t>(GgufValueType::BOOL));
  const uint8_t b = v ? 1 : 0;
  raw(&b, 1);
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::string(std::string_view k, std::string_view v) {
  key(k, static_cast<uint32_t>(GgufValueType::STRING));
  const uint64_t len = v.size();
  raw(&len, 8);
  raw(v.data(), v.size());
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::i32_array(std::string_view k, const std::vector<int32_t>& v) {
  key(k, static_cast<uint32_t>(GgufValueType::ARRAY));
  const auto elem = static_cast<uint32_t>(GgufValueType::I32);
  const uint64_t count = v.size();
  raw(&elem, 4);
  raw(&count, 8);
  if (!v.empty()) raw(v.data(), v.size() * sizeof(int32_t));
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::f32_array(std::string_view k, const std::vector<float>& v) {
  key(k, static_cast<uint32_t>(GgufValueType::ARRAY));
  const auto elem = static_cast<uint32_t>(GgufValueType::F32);
  const uint64_t count = v.size();
  raw(&elem, 4);
  raw(&count, 8);
  if (!v.empty()) raw(v.data(), v.size() * sizeof(float));
  return *this;
}

GgufMetadataBuilder& GgufMetadataBuilder::string_array(std::string_view k,
                                                       const std::vector<std::string>& v) {
  key(k, static_cast<uint32_t>(GgufValueType::ARRAY));
  const auto elem = static_cast<uint32_t>(GgufValueType::STRING);
  const uint64_t count = v.size();
  raw(&elem, 4);
  raw(&count, 8);
  for (const std::string& s : v) {
    const uint64_t len = s.size();
    raw(&len, 8);
    raw(s.data(), s.size());
  }
  return *this;
}

bool GgufMetadataBuilder::has(std::string_view k) const {
  return std::find(keys_.begin(), keys_.end(), k) != keys_.end();
}

Result<GgufFile> GgufMetadataBuilder::build(std::string name) const {
  std::vector<uint8_t> bytes(24);
  std::memcpy(bytes.data(), "GGUF", 4);
  const uint32_t version = 3;
  const uint64_t n_tensors = 0, n_kv = keys_.size();
  std::memcpy(bytes.data() + 4, &version, 4);
  std::memcpy(bytes.data() + 8, &n_tensors, 8);
  std::memcpy(bytes.data() + 16, &n_kv, 8);
  bytes.insert(bytes.end(), kv_.begin(), kv_.end());
  return GgufFile::parse(MappedFile::from_bytes(std::move(name), std::move(bytes)));
}

}  // namespace glass::formats
