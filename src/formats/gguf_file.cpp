// GgufFile look-ups and typed getters: each names the file, the key and expected versus got.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "formats/gguf.h"

namespace glass::formats {
namespace {

bool is_unsigned(GgufValueType t) {
  return t == GgufValueType::U8 || t == GgufValueType::U16 || t == GgufValueType::U32 ||
         t == GgufValueType::U64;
}
bool is_signed(GgufValueType t) {
  return t == GgufValueType::I8 || t == GgufValueType::I16 || t == GgufValueType::I32 ||
         t == GgufValueType::I64;
}
bool is_float(GgufValueType t) { return t == GgufValueType::F32 || t == GgufValueType::F64; }
bool is_integer(GgufValueType t) { return is_unsigned(t) || is_signed(t); }

std::string type_text(const GgufValue& v) {
  if (v.type != GgufValueType::ARRAY) return std::string(gguf_type_name(v.type));
  return fmt::format("array of {}", gguf_type_name(v.elem_type));
}

// The integer in `v` if it lies in [lo, hi].
bool int_in_range(const GgufValue& v, int64_t lo, uint64_t hi, int64_t& out) {
  if (is_unsigned(v.type)) {
    if (v.u64 > hi) return false;
    out = static_cast<int64_t>(v.u64);
    return true;
  }
  if (v.i64 < lo || (v.i64 > 0 && static_cast<uint64_t>(v.i64) > hi)) return false;
  out = v.i64;
  return true;
}

// Integers and floats as f32; false when a finite value is beyond f32's range.
bool to_f32(const GgufValue& v, float& out) {
  double d = 0;
  if (is_float(v.type)) {
    d = v.f64;
  } else if (is_unsigned(v.type)) {
    d = static_cast<double>(v.u64);
  } else {
    d = static_cast<double>(v.i64);
  }
  if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max())) return false;
  out = static_cast<float>(d);
  return true;
}

}  // namespace

Error GgufFile::error(const std::string& message) const {
  return make_error(ErrorCode::InvalidFile, fmt::format("gguf: {}: {}", path(), message));
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const GgufValue*> GgufFile::require(std::string_view key, GgufValueType type) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(fmt::format("key '{}' is missing", key));
  if (v->type != type)
    return error(fmt::format("key '{}' has type {}, expected {}", key, type_text(*v), gguf_type_name(type)));
  return v;
}

Result<const GgufValue*> GgufFile::require_array(std::string_view key) const {
  return require(key, GgufValueType::ARRAY);
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  auto v = require(key, GgufValueType::STRING);
  if (!v.ok()) return v.error();
  return std::string((*v)->str);
}

Result<uint32_t> GgufFile::get_u32(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(fmt::format("key '{}' is missing", key));
  if (!is_integer(v->type))
    return error(fmt::format("key '{}' has type {}, expected an integer", key, type_text(*v)));
  int64_t out = 0;
  if (!int_in_range(*v, 0, std::numeric_limits<uint32_t>::max(), out))
    return error(fmt::format("key '{}' = {} does not fit in u32", key, gguf_value_to_string(*v)));
  return static_cast<uint32_t>(out);
}

Result<float> GgufFile::get_f32(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return error(fmt::format("key '{}' is missing", key));
  if (!is_float(v->type) && !is_integer(v->type))
    return error(fmt::format("key '{}' has type {}, expected a number", key, type_text(*v)));
  float out = 0;
  if (!to_f32(*v, out))
    return error(fmt::format("key '{}' = {} does not fit in f32", key, gguf_value_to_string(*v)));
  return out;
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  auto v = require(key, GgufValueType::BOOL);
  if (!v.ok()) return v.error();
  return (*v)->u64 != 0;
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
  auto v = get_string_views(key);
  if (!v.ok()) return v.error();
  return std::vector<std::string>((*v)->begin(), (*v)->end());
}

Result<const GgufStrings*> GgufFile::get_string_views(std::string_view key) const {
  auto v = require_array(key);
  if (!v.ok()) return v.error();
  if ((*v)->elem_type != GgufValueType::STRING)
    return error(fmt::format("key '{}' has type {}, expected array of string", key, type_text(**v)));
  return &(*v)->strings;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  auto r = require_array(key);
  if (!r.ok()) return r.error();
  const GgufValue& v = **r;
  if (!is_float(v.elem_type) && !is_integer(v.elem_type))
    return error(fmt::format("key '{}' has type {}, expected array of f32", key, type_text(v)));
  std::vector<float> out(static_cast<size_t>(v.count));  // count was bounded by the file size at parse
  for (uint64_t i = 0; i < v.count; ++i)
    if (!to_f32(v.element(i), out[i]))
      return error(fmt::format("key '{}' element {} does not fit in f32", key, i));
  return out;
}

Result<std::vector<int32_t>> GgufFile::get_i32_array(std::string_view key) const {
  auto r = require_array(key);
  if (!r.ok()) return r.error();
  const GgufValue& v = **r;
  if (!is_integer(v.elem_type))
    return error(fmt::format("key '{}' has type {}, expected array of integers", key, type_text(v)));
  std::vector<int32_t> out(static_cast<size_t>(v.count));
  for (uint64_t i = 0; i < v.count; ++i) {
    int64_t x = 0;
    const GgufValue e = v.element(i);
    if (!int_in_range(e, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), x))
      return error(
          fmt::format("key '{}' element {} = {} does not fit in i32", key, i, gguf_value_to_string(e)));
    out[i] = static_cast<int32_t>(x);
  }
  return out;
}

}  // namespace glass::formats
