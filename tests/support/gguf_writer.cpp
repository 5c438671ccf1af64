#include "support/gguf_writer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "support/scratch_dir.h"

namespace glass::test {
namespace {

// Appends bytes with resize + memcpy: GCC 12 at -O2 misreports vector::insert of byte ranges
// (-Wstringop-overflow / -Warray-bounds false positives).
void append(std::vector<uint8_t>& out, const void* data, size_t n) {
  if (n == 0) return;
  const size_t at = out.size();
  out.resize(at + n);
  std::memcpy(out.data() + at, data, n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  append(out, &v, sizeof(T));  // little-endian host, as the format
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  append(out, s.data(), s.size());
}

template <class T>
GgufWriter::Value scalar(uint32_t type, T v) {
  GgufWriter::Value out{type, {}};
  put(out.bytes, v);
  return out;
}

void pad_to(std::vector<uint8_t>& out, uint64_t align) {
  while (out.size() % align != 0) out.push_back(0);
}

}  // namespace

GgufWriter::Value GgufWriter::u8(uint8_t v) { return scalar(kU8, v); }
GgufWriter::Value GgufWriter::i8(int8_t v) { return scalar(kI8, v); }
GgufWriter::Value GgufWriter::u16(uint16_t v) { return scalar(kU16, v); }
GgufWriter::Value GgufWriter::i16(int16_t v) { return scalar(kI16, v); }
GgufWriter::Value GgufWriter::u32(uint32_t v) { return scalar(kU32, v); }
GgufWriter::Value GgufWriter::i32(int32_t v) { return scalar(kI32, v); }
GgufWriter::Value GgufWriter::f32(float v) { return scalar(kF32, v); }
GgufWriter::Value GgufWriter::boolean(bool v) { return scalar(kBool, static_cast<uint8_t>(v)); }
GgufWriter::Value GgufWriter::u64(uint64_t v) { return scalar(kU64, v); }
GgufWriter::Value GgufWriter::i64(int64_t v) { return scalar(kI64, v); }
GgufWriter::Value GgufWriter::f64(double v) { return scalar(kF64, v); }

GgufWriter::Value GgufWriter::string(std::string_view s) {
  Value out{kString, {}};
  put_string(out.bytes, s);
  return out;
}

GgufWriter::Value GgufWriter::array(uint32_t elem_type, const std::vector<Value>& items) {
  Value out{kArray, {}};
  put<uint32_t>(out.bytes, elem_type);
  put<uint64_t>(out.bytes, items.size());
  for (const auto& v : items) append(out.bytes, v.bytes.data(), v.bytes.size());
  return out;
}

GgufWriter::Value GgufWriter::string_array(const std::vector<std::string>& items) {
  std::vector<Value> vs;
  for (const auto& s : items) vs.push_back(string(s));
  return array(kString, vs);
}

GgufWriter::Value GgufWriter::f32_array(const std::vector<float>& items) {
  std::vector<Value> vs;
  for (float f : items) vs.push_back(f32(f));
  return array(kF32, vs);
}

GgufWriter::Value GgufWriter::i32_array(const std::vector<int32_t>& items) {
  std::vector<Value> vs;
  for (int32_t i : items) vs.push_back(i32(i));
  return array(kI32, vs);
}

GgufWriter::Value GgufWriter::array_header(uint32_t elem_type, uint64_t count, std::vector<uint8_t> payload) {
  Value out{kArray, {}};
  put<uint32_t>(out.bytes, elem_type);
  put<uint64_t>(out.bytes, count);
  append(out.bytes, payload.data(), payload.size());
  return out;
}

GgufWriter& GgufWriter::version(uint32_t v) {
  version_ = v;
  return *this;
}

GgufWriter& GgufWriter::alignment(uint32_t a) {
  alignment_ = a;
  return kv("general.alignment", u32(a));
}

GgufWriter& GgufWriter::kv(std::string key, Value v) {
  kvs_.emplace_back(std::move(key), std::move(v));
  return *this;
}

GgufWriter& GgufWriter::tensor(Tensor t) {
  tensors_.push_back(std::move(t));
  return *this;
}

GgufWriter& GgufWriter::tensor_filled(std::string name, const std::vector<int64_t>& shape, float value) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return tensor_f32(std::move(name), shape, std::vector<float>(static_cast<size_t>(n), value));
}

GgufWriter& GgufWriter::tensor_f32(std::string name, const std::vector<int64_t>& shape,
                                   const std::vector<float>& values) {
  Tensor t;
  t.name = std::move(name);
  for (auto it = shape.rbegin(); it != shape.rend(); ++it) t.ne.push_back(static_cast<uint64_t>(*it));
  t.type = kTF32;
  t.data.resize(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return tensor(std::move(t));
}

GgufWriter& GgufWriter::n_tensors_override(uint64_t n) {
  n_tensors_override_ = n;
  return *this;
}

GgufWriter& GgufWriter::n_kv_override(uint64_t n) {
  n_kv_override_ = n;
  return *this;
}

GgufWriter::Built GgufWriter::build() const {
  Built b;
  auto& out = b.bytes;
  append(out, "GGUF", 4);
  put<uint32_t>(out, version_);
  put<uint64_t>(out, n_tensors_override_.value_or(tensors_.size()));
  put<uint64_t>(out, n_kv_override_.value_or(kvs_.size()));
  for (const auto& [key, v] : kvs_) {
    b.kv_offsets.push_back(out.size());
    put_string(out, key);
    put<uint32_t>(out, v.type);
    append(out, v.bytes.data(), v.bytes.size());
  }
  // Data offsets: explicit ones as given, the rest packed at the alignment in order.
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const auto& t : tensors_) {
    offsets.push_back(t.offset.value_or(next));
    next += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto& t = tensors_[i];
    b.tensor_info_offsets.push_back(out.size());
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.ne.size()));
    for (uint64_t d : t.ne) put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offsets[i]);
  }
  if (!tensors_.empty()) pad_to(out, alignment_);
  b.data_start = out.size();
  for (const auto& t : tensors_) {  // data in declaration order, whatever offsets were claimed
    append(out, t.data.data(), t.data.size());
    pad_to(out, alignment_);
  }
  return b;
}

std::filesystem::path write_temp_file(const std::vector<uint8_t>& bytes, std::string_view name) {
  const auto path = scratch_dir() / std::string(name);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  f.close();
  EXPECT_TRUE(f.good()) << "writing " << path;
  return path;
}

}  // namespace glass::test
