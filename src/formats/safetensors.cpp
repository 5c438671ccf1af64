// safetensors parsing and validation (format: safetensors.h). Every number from the header bounds
// what follows before it is used: the header length before the JSON is parsed, each tensor's
// element count (overflow-checked) before its byte span is compared with data_offsets, every range
// against the file size, and all ranges against each other.
#include "formats/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "formats/gguf_detail.h"
#include "formats/half.h"
#include "formats/json_strict.h"

namespace glass::formats {
namespace {

struct DTypeRow {
  std::string_view name;
  uint64_t bytes;  // 0: sub-byte element, not addressable in place
  std::optional<graph::DType> graph;
};

// Every dtype the safetensors format defines (safetensors 0.5).
constexpr DTypeRow kDTypes[] = {
    {"BOOL", 1, std::nullopt},       {"U8", 1, std::nullopt},       {"I8", 1, graph::DType::I8},
    {"F8_E5M2", 1, std::nullopt},    {"F8_E4M3", 1, std::nullopt},  {"F8_E8M0", 1, std::nullopt},
    {"I16", 2, std::nullopt},        {"U16", 2, std::nullopt},      {"F16", 2, graph::DType::F16},
    {"BF16", 2, graph::DType::BF16}, {"I32", 4, graph::DType::I32}, {"U32", 4, std::nullopt},
    {"F32", 4, graph::DType::F32},   {"F64", 8, std::nullopt},      {"I64", 8, std::nullopt},
    {"U64", 8, std::nullopt},        {"C64", 8, std::nullopt},      {"F4", 0, std::nullopt},
    {"F6_E2M3", 0, std::nullopt},    {"F6_E3M2", 0, std::nullopt},
};

const DTypeRow* find_dtype(std::string_view name) {
  for (const DTypeRow& r : kDTypes)
    if (r.name == name) return &r;
  return nullptr;
}

// A non-negative JSON integer that fits in u64 (floats such as 3.0 are refused: the format writes
// integers).
bool as_u64(const Json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (j.is_number_integer() && j.get<int64_t>() >= 0) {
    out = static_cast<uint64_t>(j.get<int64_t>());
    return true;
  }
  return false;
}

}  // namespace

float float_element(const SafetensorsTensor& t, uint64_t i) {
  const auto* p = static_cast<const std::byte*>(t.data);
  if (t.graph_dtype == graph::DType::F32) {
    float v = 0;
    std::memcpy(&v, p + 4 * i, 4);
    return v;
  }
  uint16_t h = 0;
  std::memcpy(&h, p + 2 * i, 2);
  return t.graph_dtype == graph::DType::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
}

class SafetensorsParser {
 public:
  explicit SafetensorsParser(std::shared_ptr<const MappedFile> file) { out_.file_ = std::move(file); }

  Result<SafetensorsFile> run() {
    const uint64_t size = out_.file_->size();
    if (size < 8) return invalid(fmt::format("file has {} bytes, the header length alone needs 8", size));
    uint64_t n = 0;
    std::memcpy(&n, out_.file_->data(), 8);
    if (n > size - 8)
      return invalid(fmt::format("header length {} runs past the end of the file ({} bytes)", n, size));
    if (n > kSafetensorsMaxHeader)
      return invalid(
          fmt::format("header length {} exceeds the format's limit of {} bytes", n, kSafetensorsMaxHeader));
    data_start_ = 8 + n;
    const std::string_view text(reinterpret_cast<const char*>(out_.file_->data()) + 8,
                                static_cast<size_t>(n));
    if (text.empty() || text.front() != '{') return invalid("header does not start with '{'");
    auto header = parse_json_strict(text, fmt::format("safetensors: {}: header", path()));
    if (!header) return header.error();
    if (!header->is_object()) return invalid("header is not a JSON object");
    out_.tensors_.reserve(header->size());
    for (const auto& [name, entry] : header->items()) {
      if (name == "__metadata__") {
        if (auto s = metadata(entry); !s) return s.error();
        continue;
      }
      if (auto s = tensor(name, entry); !s) return s.error();
    }
    if (auto s = ranges(); !s) return s.error();
    for (size_t i = 0; i < out_.tensors_.size(); ++i) out_.index_.emplace(out_.tensors_[i].name, i);
    return std::move(out_);
  }

 private:
  const std::string& path() const { return out_.file_->path(); }
  Error fail(ErrorCode code, const std::string& msg) const {
    return make_error(code, fmt::format("safetensors: {}: {}", path(), msg));
  }
  Error invalid(const std::string& msg) const { return fail(ErrorCode::InvalidFile, msg); }
  Error bad_tensor(const std::string& name, const std::string& msg) const {
    return invalid(fmt::format("tensor '{}': {}", gguf_detail::printable(name), msg));
  }

  Status metadata(const Json& entry) {
    if (!entry.is_object()) return invalid("__metadata__ is not an object");
    for (const auto& [k, v] : entry.items()) {
      if (!v.is_string())
        return invalid(fmt::format("__metadata__ '{}' is not a string", gguf_detail::printable(k)));
      out_.metadata_.emplace(k, v.get<std::string>());
    }
    return {};
  }

  Status tensor(const std::string& name, const Json& entry) {
    if (name.empty()) return invalid("a tensor has an empty name");
    if (!entry.is_object()) return bad_tensor(name, "entry is not an object");
    const auto dtype = entry.find("dtype");
    const auto shape = entry.find("shape");
    const auto offsets = entry.find("data_offsets");
    if (dtype == entry.end() || !dtype->is_string())
      return bad_tensor(name, "'dtype' is missing or not a string");
    if (shape == entry.end() || !shape->is_array())
      return bad_tensor(name, "'shape' is missing or not an array");
    if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
      return bad_tensor(name, "'data_offsets' is missing or not an array [begin, end]");

    SafetensorsTensor t;
    t.name = name;
    t.dtype = dtype->get<std::string>();
    const DTypeRow* row = find_dtype(t.dtype);
    if (row == nullptr)
      return bad_tensor(name, fmt::format("unknown dtype '{}'", gguf_detail::printable(t.dtype)));
    if (row->bytes == 0)
      return fail(ErrorCode::Unsupported,
                  fmt::format("tensor '{}': dtype {} packs elements below a byte, which glass does not read",
                              gguf_detail::printable(name), row->name));
    t.graph_dtype = row->graph;

    // Element count, overflow-checked so that elements x bytes fits in u64.
    uint64_t n = 1;
    const uint64_t limit = std::numeric_limits<uint64_t>::max() / row->bytes;
    for (size_t i = 0; i < shape->size(); ++i) {
      uint64_t d = 0;
      if (!as_u64((*shape)[i], d) || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return bad_tensor(name, fmt::format("shape[{}] is not a non-negative integer", i));
      if (d != 0 && n > limit / d) return bad_tensor(name, "shape's element count overflows");
      n *= d;
      t.shape.push_back(static_cast<int64_t>(d));
    }
    uint64_t begin = 0, end = 0;
    if (!as_u64((*offsets)[0], begin) || !as_u64((*offsets)[1], end))
      return bad_tensor(name, "data_offsets are not non-negative integers");
    if (end < begin)
      return bad_tensor(name, fmt::format("data_offsets [{}, {}] end before they begin", begin, end));
    const uint64_t buffer = out_.file_->size() - data_start_;
    if (end > buffer)
      return bad_tensor(
          name, fmt::format("data_offsets [{}, {}] run past the data buffer ({} bytes; file has {})", begin,
                            end, buffer, out_.file_->size()));
    t.nbytes = n * row->bytes;
    if (t.nbytes != end - begin)
      return bad_tensor(name, fmt::format("{} [{}] needs {} bytes but data_offsets [{}, {}] span {}", t.dtype,
                                          fmt::join(t.shape, ", "), t.nbytes, begin, end, end - begin));
    t.offset = data_start_ + begin;
    // Kernels read elements in place, so each must sit at a multiple of its size (dtypes glass
    // never computes with are not read at all).
    if (t.graph_dtype && t.nbytes > 0 && t.offset % row->bytes != 0)
      return fail(ErrorCode::Unsupported,
                  fmt::format("tensor '{}': data at file offset {} is not aligned to its {}-byte elements",
                              gguf_detail::printable(name), t.offset, row->bytes));
    t.data = out_.file_->data() + t.offset;
    out_.tensors_.push_back(std::move(t));
    return {};
  }

  // Sorted by offset, each non-empty range must end at or before the next one begins.
  Status ranges() {
    std::sort(out_.tensors_.begin(), out_.tensors_.end(),
              [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
                return a.offset != b.offset ? a.offset < b.offset : a.name < b.name;
              });
    const SafetensorsTensor* prev = nullptr;
    for (const SafetensorsTensor& t : out_.tensors_) {
      if (t.nbytes == 0) continue;
      if (prev != nullptr && prev->offset + prev->nbytes > t.offset)
        return invalid(fmt::format("tensors '{}' (data_offsets [{}, {}]) and '{}' ([{}, {}]) overlap",
                                   gguf_detail::printable(prev->name), prev->offset - data_start_,
                                   prev->offset - data_start_ + prev->nbytes, gguf_detail::printable(t.name),
                                   t.offset - data_start_, t.offset - data_start_ + t.nbytes));
      prev = &t;
    }
    return {};
  }

  SafetensorsFile out_;
  uint64_t data_start_ = 0;
};

Result<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  auto file = MappedFile::open(path);
  if (!file) return file.error();
  return parse(std::move(*file));
}

Result<SafetensorsFile> SafetensorsFile::parse(std::shared_ptr<const MappedFile> file) {
  return SafetensorsParser(std::move(file)).run();
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace glass::formats
