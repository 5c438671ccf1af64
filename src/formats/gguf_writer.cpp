// GGUF writing: header, metadata, tensor infos, padding, then the data stream (see gguf_writer.h).
#include "formats/gguf_writer.h"

#include <fmt/format.h>

#include <cstring>
#include <set>
#include <string_view>

#include "formats/gguf_detail.h"

namespace glass::formats {
namespace {

constexpr uint32_t kVersion = 3;

// Little-endian encoding into a byte buffer (every host glass runs on is little-endian, as GGUF).
class Encoder {
 public:
  template <class T>
  void scalar(T v) {
    raw(&v, sizeof(T));
  }
  // resize + memcpy rather than insert(end, p, p + n): GCC 12 -O3 warns (-Wstringop-overflow,
  // a false positive) about the inlined insert.
  void raw(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = bytes.size();
    bytes.resize(at + n);
    std::memcpy(bytes.data() + at, p, n);
  }
  void str(std::string_view s) {
    scalar<uint64_t>(s.size());
    raw(s.data(), s.size());
  }
  std::vector<uint8_t> bytes;
};

// The scalar in v, at the width of v.type.
void encode_scalar(Encoder& e, const GgufValue& v) {
  switch (v.type) {
    case GgufValueType::U8:
    case GgufValueType::BOOL:
      e.scalar(static_cast<uint8_t>(v.u64));
      break;
    case GgufValueType::I8:
      e.scalar(static_cast<int8_t>(v.i64));
      break;
    case GgufValueType::U16:
      e.scalar(static_cast<uint16_t>(v.u64));
      break;
    case GgufValueType::I16:
      e.scalar(static_cast<int16_t>(v.i64));
      break;
    case GgufValueType::U32:
      e.scalar(static_cast<uint32_t>(v.u64));
      break;
    case GgufValueType::I32:
      e.scalar(static_cast<int32_t>(v.i64));
      break;
    case GgufValueType::F32:
      e.scalar(static_cast<float>(v.f64));
      break;
    case GgufValueType::U64:
      e.scalar(v.u64);
      break;
    case GgufValueType::I64:
      e.scalar(v.i64);
      break;
    case GgufValueType::F64:
      e.scalar(v.f64);
      break;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY:
      break;
  }
}

// What follows a value's type id: the scalar, the string, or elem type | count | elements.
Status encode_value(Encoder& e, const GgufValue& v, const std::string& key) {
  if (!gguf_detail::valid_value_type(static_cast<uint32_t>(v.type)))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("gguf writer: key '{}': invalid value type", key));
  if (v.type == GgufValueType::STRING) {
    e.str(v.str);
    return {};
  }
  if (v.type != GgufValueType::ARRAY) {
    encode_scalar(e, v);
    return {};
  }
  e.scalar(static_cast<uint32_t>(v.elem_type));
  e.scalar<uint64_t>(v.count);
  if (v.elem_type == GgufValueType::STRING) {
    if (v.strings.size() != v.count)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf writer: key '{}': {} strings for a count of {}", key, v.strings.size(), v.count));
    for (std::string_view s : v.strings) e.str(s);
    return {};
  }
  if (v.elem_type == GgufValueType::ARRAY) {
    if (v.items.size() != v.count)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf writer: key '{}': {} items for a count of {}", key, v.items.size(), v.count));
    for (const GgufValue& item : v.items)
      if (Status s = encode_value(e, item, key); !s.ok()) return s;
    return {};
  }
  if (!gguf_detail::valid_value_type(static_cast<uint32_t>(v.elem_type)))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("gguf writer: key '{}': invalid element type", key));
  if (v.count > 0 && v.raw == nullptr)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("gguf writer: key '{}': array has no data", key));
  if (v.count > 0) e.raw(v.raw, v.count * gguf_detail::scalar_size(v.elem_type));
  return {};
}

uint64_t pad(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

Status GgufWriter::put(const void* data, uint64_t n) {
  if (!file_.has_value())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("gguf writer: {}: write after finish", path_.string()));
  if (n > 0)
    if (Status s = file_->write(data, static_cast<size_t>(n)); !s.ok()) return s;
  pos_ += n;
  return {};
}

Status GgufWriter::pad_to_alignment() {
  static constexpr uint8_t kZeros[256] = {};
  uint64_t left = pad(pos_, alignment_) - pos_;
  while (left > 0) {
    const uint64_t n = left < sizeof(kZeros) ? left : sizeof(kZeros);
    if (Status s = put(kZeros, n); !s.ok()) return s;
    left -= n;
  }
  return {};
}

Result<GgufWriter> GgufWriter::create(const std::filesystem::path& path,
                                      const std::vector<std::pair<std::string, GgufValue>>& metadata,
                                      std::vector<GgufTensorSpec> tensors, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("gguf writer: {}: alignment {} is not a power of two", path.string(), alignment));
  GgufWriter w;
  w.path_ = path;
  w.alignment_ = alignment;

  Encoder e;
  e.raw("GGUF", 4);
  e.scalar(kVersion);
  e.scalar<uint64_t>(tensors.size());
  e.scalar<uint64_t>(metadata.size());
  std::set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    if (!keys.insert(key).second)
      return make_error(ErrorCode::InvalidArgument, fmt::format("gguf writer: key '{}' appears twice", key));
    e.str(key);
    e.scalar(static_cast<uint32_t>(value.type));
    if (Status s = encode_value(e, value, key); !s.ok()) return s.error();
  }
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const GgufTensorSpec& t : tensors) {
    const auto id = gguf_detail::gguf_from_dtype(t.dtype);
    if (!id)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("gguf writer: tensor '{}': type has no GGUF id", t.name));
    if (!names.insert(t.name).second)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("gguf writer: tensor '{}' appears twice", t.name));
    if (t.shape.empty() || t.shape.size() > 4)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf writer: tensor '{}': {} dimensions (1 to 4)", t.name, t.shape.size()));
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d <= 0 || n > UINT64_MAX / static_cast<uint64_t>(d))
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("gguf writer: tensor '{}': bad shape", t.name));
      n *= static_cast<uint64_t>(d);
    }
    const auto bytes = graph::dtype_bytes(t.dtype, n);
    if (!bytes || t.shape.back() % graph::traits(t.dtype).block_size != 0)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("gguf writer: tensor '{}': row of {} is not a multiple of {}'s block of {}", t.name,
                      t.shape.back(), graph::dtype_name(t.dtype), graph::traits(t.dtype).block_size));
    e.str(t.name);
    e.scalar(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      e.scalar(static_cast<uint64_t>(*it));  // innermost first
    e.scalar(*id);
    e.scalar(offset);
    w.sizes_.push_back(*bytes);
    offset += pad(*bytes, alignment);
  }
  w.tensors_ = std::move(tensors);

  auto file = OutputFile::create(path, "gguf writer");
  if (!file.ok()) return file.error();
  w.file_.emplace(std::move(*file));
  if (Status s = w.put(e.bytes.data(), e.bytes.size()); !s.ok()) return s.error();
  if (Status s = w.pad_to_alignment(); !s.ok()) return s.error();
  return w;
}

Status GgufWriter::write(const void* data, uint64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (n > 0) {
    if (current_ >= tensors_.size())
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("gguf writer: {}: data beyond the last tensor", path_.string()));
    const uint64_t take = std::min(n, sizes_[current_] - written_);
    if (Status s = put(bytes, take); !s.ok()) return s;
    bytes += take;
    n -= take;
    written_ += take;
    if (written_ == sizes_[current_]) {
      if (Status s = pad_to_alignment(); !s.ok()) return s;
      ++current_;
      written_ = 0;
    }
  }
  return {};
}

Status GgufWriter::finish() {
  // Zero-byte tensors cannot exist (shapes are positive), so current_ counts the complete ones.
  if (current_ != tensors_.size())
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("gguf writer: {}: tensor '{}' got {} of {} bytes", path_.string(),
                                  tensors_[current_].name, written_, sizes_[current_]));
  if (!file_.has_value())
    return make_error(ErrorCode::Internal, fmt::format("gguf writer: {}: finished twice", path_.string()));
  Status s = file_->commit();
  file_.reset();
  return s;
}

}  // namespace glass::formats
