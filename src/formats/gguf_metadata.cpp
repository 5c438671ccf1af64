// Serialises metadata as GGUF v3: "GGUF" | u32 version | u64 n_tensors (0) | u64 n_kv | KVs.
#include "formats/gguf_metadata.h"

#include <algorithm>
#include <cstring>

#include "formats/gguf_detail.h"

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

GgufMetadataBuilder& GgufMetadataBuilder::bool_array(std::string_view k, const std::vector<bool>& v) {
  key(k, static_cast<uint32_t>(GgufValueType::ARRAY));
  const auto elem = static_cast<uint32_t>(GgufValueType::BOOL);
  const uint64_t count = v.size();
  raw(&elem, 4);
  raw(&count, 8);
  for (bool b : v) {
    const uint8_t byte = b ? 1 : 0;
    raw(&byte, 1);
  }
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

void GgufMetadataBuilder::payload(const GgufValue& v) {
  if (v.type == GgufValueType::STRING) {
    const uint64_t len = v.str.size();
    raw(&len, 8);
    raw(v.str.data(), v.str.size());
    return;
  }
  if (v.type != GgufValueType::ARRAY) {
    const GgufValueType type = v.type;
    const uint64_t size = gguf_detail::scalar_size(type);
    uint8_t bytes[8] = {};
    if (type == GgufValueType::F32) {
      const auto f = static_cast<float>(v.f64);
      std::memcpy(bytes, &f, 4);
    } else if (type == GgufValueType::F64) {
      std::memcpy(bytes, &v.f64, 8);
    } else if (type == GgufValueType::I8 || type == GgufValueType::I16 || type == GgufValueType::I32 ||
               type == GgufValueType::I64) {
      std::memcpy(bytes, &v.i64, size);  // little-endian: the low bytes
    } else {
      std::memcpy(bytes, &v.u64, size);
    }
    raw(bytes, size);
    return;
  }
  const auto elem = static_cast<uint32_t>(v.elem_type);
  raw(&elem, 4);
  raw(&v.count, 8);
  if (v.elem_type == GgufValueType::STRING) {
    for (std::string_view s : v.strings) {
      const uint64_t len = s.size();
      raw(&len, 8);
      raw(s.data(), s.size());
    }
  } else if (v.elem_type == GgufValueType::ARRAY) {
    for (const GgufValue& item : v.items) payload(item);
  } else if (v.count > 0) {
    raw(v.raw, v.count * gguf_detail::scalar_size(v.elem_type));
  }
}

GgufMetadataBuilder& GgufMetadataBuilder::value(std::string_view k, const GgufValue& v) {
  key(k, static_cast<uint32_t>(v.type));
  payload(v);
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
