// GGUF parsing and validation. Layout (all little-endian):
//   header:  "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x:  string key | u32 value type | value
//            (string = u64 length + bytes; array = u32 element type | u64 count | elements)
//   n_tensors x: string name | u32 n_dims | u64 ne[n_dims] (innermost first) | u32 ggml type |
//                u64 offset (relative to the data section)
//   padding to `general.alignment` (default 32), then the data section.
// Every number read from the file bounds what follows before it is used: a count is checked
// against the bytes left (each element needs at least some bytes) before any allocation.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "formats/gguf.h"
#include "formats/gguf_detail.h"

namespace glass::formats {
namespace {

constexpr uint32_t kMaxDims = 4;
// Arrays of arrays are legal but unused by real models; a bound keeps recursion shallow.
constexpr int kMaxArrayDepth = 4;
// Smallest encodings, used to bound counts by the bytes left: a KV is an empty key (8), a type (4)
// and a 1-byte scalar; a tensor info is an empty name (8), n_dims (4), one dim (8), type (4) and
// offset (8); a string is its length (8); an array is its element type (4) and count (8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;
// Parsed entries cost ~150-250 bytes of memory each (a GgufValue is ~120 bytes, plus its key or
// name, its index entry and shape), 10-20 times their smallest encoding, so their numbers are
// capped far above any real model (tens of keys, a few thousand tensors) at a count whose cost
// stays within the 64 MiB a rejected file may take beyond twice its size (issue 29): 2^16 of them
// cost at most ~16 MiB.
constexpr uint64_t kMaxKv = 1 << 16;
constexpr uint64_t kMaxTensors = 1 << 16;
constexpr uint64_t kMaxNestedItems = 1 << 16;  // elements of arrays of arrays, over the whole file

// A bounds-checked cursor over the mapping.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint64_t pos() const { return pos_; }
  const uint8_t* here() const { return data_ + pos_; }
  uint64_t left() const { return size_ - pos_; }
  bool take(uint64_t n, const uint8_t*& p) {
    if (n > left()) return false;
    p = data_ + pos_;
    pos_ += n;
    return true;
  }
  template <class T>
  bool read(T& v) {
    const uint8_t* p = nullptr;
    if (!take(sizeof(T), p)) return false;
    std::memcpy(&v, p, sizeof(T));
    return true;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

}  // namespace

class GgufParser {
 public:
  explicit GgufParser(std::shared_ptr<const MappedFile> file) : in_(file->data(), file->size()) {
    out_.file_ = std::move(file);
  }

  Result<GgufFile> run() {
    if (auto s = header(); !s.ok()) return s.error();
    for (uint64_t i = 0; i < n_kv_; ++i)
      if (auto s = kv(i); !s.ok()) return s.error();
    if (auto s = alignment(); !s.ok()) return s.error();
    for (uint64_t i = 0; i < n_tensors_; ++i)
      if (auto s = tensor_info(i); !s.ok()) return s.error();
    if (auto s = data_ranges(); !s.ok()) return s.error();
    return std::move(out_);
  }

 private:
  const std::string& path() const { return out_.file_->path(); }
  uint64_t file_size() const { return out_.file_->size(); }

  Error fail(ErrorCode code, const std::string& msg) const {
    return make_error(code, fmt::format("gguf: {}: {}", path(), msg));
  }
  Error invalid(const std::string& msg) const { return fail(ErrorCode::InvalidFile, msg); }
  // `what` is read at the cursor but the file ends first.
  Error truncated(std::string_view what, uint64_t need) const {
    return invalid(fmt::format("truncated: {}{}: needs {} bytes at offset {}, file has {} bytes", where_,
                               what, need, in_.pos(), file_size()));
  }
  // `count` items of at least `min_bytes` each cannot fit in what is left of the file.
  Error impossible_count(std::string_view what, uint64_t count, uint64_t min_bytes) const {
    return invalid(
        fmt::format("{}{} = {} is impossible: only {} bytes follow at offset {} (each needs at least {})",
                    where_, what, count, in_.left(), in_.pos(), min_bytes));
  }

  Error over_limit(std::string_view what, uint64_t count, uint64_t limit) const {
    return fail(ErrorCode::CapacityExceeded,
                fmt::format("{}{} = {} exceeds glass's limit of {}", where_, what, count, limit));
  }

  Status read_u32(uint32_t& v, std::string_view what) {
    if (!in_.read(v)) return truncated(what, 4);
    return {};
  }
  Status read_u64(uint64_t& v, std::string_view what) {
    if (!in_.read(v)) return truncated(what, 8);
    return {};
  }
  Status read_string(std::string_view& s, std::string_view what) {
    uint64_t len = 0;
    if (!in_.read(len)) return truncated(fmt::format("{} length", what), 8);
    const uint8_t* p = nullptr;
    if (!in_.take(len, p)) return truncated(what, len);
    s = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    return {};
  }

  Status header() {
    const uint8_t* magic = nullptr;
    if (!in_.take(4, magic)) return truncated("magic", 4);
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      std::string got;
      for (int i = 0; i < 4; ++i) got += fmt::format("{:02x}", magic[i]);
      return invalid(fmt::format("bad magic: expected 'GGUF' (47475546), got {}", got));
    }
    uint32_t version = 0;
    if (auto s = read_u32(version, "version"); !s.ok()) return s;
    if (version != 2 && version != 3) {
      // A big-endian file reads its version byte-swapped (3 -> 0x03000000).
      if ((version & 0xffffu) == 0 && version != 0)
        return fail(ErrorCode::Unsupported,
                    fmt::format("big-endian GGUF (version field 0x{:08x}) is not supported", version));
      return fail(ErrorCode::Unsupported, fmt::format("unsupported version {} (supported: 2, 3)", version));
    }
    out_.version_ = version;
    if (auto s = read_u64(n_tensors_, "tensor count"); !s.ok()) return s;
    if (auto s = read_u64(n_kv_, "metadata count"); !s.ok()) return s;
    if (n_kv_ > in_.left() / kMinKvBytes) return impossible_count("metadata count", n_kv_, kMinKvBytes);
    if (n_tensors_ > in_.left() / kMinTensorInfoBytes)
      return impossible_count("tensor count", n_tensors_, kMinTensorInfoBytes);
    if (n_kv_ > kMaxKv) return over_limit("metadata count", n_kv_, kMaxKv);
    if (n_tensors_ > kMaxTensors) return over_limit("tensor count", n_tensors_, kMaxTensors);
    out_.tensors_.reserve(static_cast<size_t>(n_tensors_));  // bounded by the bytes left and the cap
    return {};
  }

  Status kv(uint64_t i) {
    where_ = fmt::format("metadata entry #{}: ", i);
    std::string_view key;
    if (auto s = read_string(key, "key"); !s.ok()) return s;
    where_ = fmt::format("key '{}': ", gguf_detail::printable(key));
    if (out_.key_index_.count(key) != 0)
      return invalid(fmt::format("duplicate metadata key '{}'", gguf_detail::printable(key)));
    uint32_t type = 0;
    if (auto s = read_u32(type, "value type"); !s.ok()) return s;
    GgufValue value;
    if (auto s = read_value(type, value, 0); !s.ok()) return s;
    out_.key_index_.emplace(key, out_.metadata_.size());
    out_.metadata_.emplace_back(std::string(key), std::move(value));
    return {};
  }

  Status read_value(uint32_t type_id, GgufValue& v, int depth) {
    if (!gguf_detail::valid_value_type(type_id))
      return invalid(fmt::format("{}unknown value type {} (expected 0..12)", where_, type_id));
    const auto type = static_cast<GgufValueType>(type_id);
    if (type == GgufValueType::STRING) {
      v.type = type;
      return read_string(v.str, "string value");
    }
    if (type == GgufValueType::ARRAY) return read_array(v, depth);
    const uint64_t size = gguf_detail::scalar_size(type);
    const uint8_t* p = nullptr;
    if (!in_.take(size, p)) return truncated(fmt::format("{} value", gguf_type_name(type)), size);
    if (type == GgufValueType::BOOL && p[0] > 1)
      return invalid(fmt::format("{}bool value is {}, expected 0 or 1", where_, p[0]));
    v = gguf_detail::decode_scalar(type, p);
    return {};
  }

  Status read_array(GgufValue& v, int depth) {
    if (depth >= kMaxArrayDepth)
      return invalid(fmt::format("{}arrays nested more than {} deep", where_, kMaxArrayDepth));
    uint32_t elem = 0;
    if (auto s = read_u32(elem, "array element type"); !s.ok()) return s;
    if (!gguf_detail::valid_value_type(elem))
      return invalid(fmt::format("{}unknown array element type {} (expected 0..12)", where_, elem));
    uint64_t count = 0;
    if (auto s = read_u64(count, "array count"); !s.ok()) return s;
    v.type = GgufValueType::ARRAY;
    v.elem_type = static_cast<GgufValueType>(elem);
    v.count = count;
    if (v.elem_type == GgufValueType::STRING) {
      if (count > in_.left() / kMinStringBytes)
        return impossible_count("string array count", count, kMinStringBytes);
      v.strings.count_ = static_cast<size_t>(count);
      v.strings.checkpoints_.reserve(static_cast<size_t>(count / GgufStrings::kStride + 1));
      for (uint64_t i = 0; i < count; ++i) {
        if (i % GgufStrings::kStride == 0) v.strings.checkpoints_.push_back(in_.here());
        std::string_view s;
        if (auto st = read_string(s, "string array element"); !st.ok()) return st;
      }
      return {};
    }
    if (v.elem_type == GgufValueType::ARRAY) {
      if (count > in_.left() / kMinArrayBytes)
        return impossible_count("nested array count", count, kMinArrayBytes);
      if (count > kMaxNestedItems - nested_items_)
        return over_limit("total nested array elements", nested_items_ + count, kMaxNestedItems);
      nested_items_ += count;
      v.items.resize(static_cast<size_t>(count));
      for (auto& item : v.items)
        if (auto st = read_array(item, depth + 1); !st.ok()) return st;
      return {};
    }
    const uint64_t size = gguf_detail::scalar_size(v.elem_type);
    if (count > in_.left() / size)
      return impossible_count(fmt::format("{} array count", gguf_type_name(v.elem_type)), count, size);
    if (!in_.take(count * size, v.raw)) return truncated("array data", count * size);
    if (v.elem_type == GgufValueType::BOOL)
      for (uint64_t k = 0; k < count; ++k)
        if (v.raw[k] > 1)
          return invalid(fmt::format("{}bool array element {} is {}, expected 0 or 1", where_, k, v.raw[k]));
    return {};
  }

  // general.alignment: the data section and every tensor offset are multiples of it.
  Status alignment() {
    where_.clear();
    const GgufValue* a = out_.find("general.alignment");
    if (a == nullptr) return {};
    auto value = out_.get_u32("general.alignment");
    if (!value.ok()) return value.error();
    if (*value == 0 || (*value & (*value - 1)) != 0)
      return invalid(fmt::format("general.alignment = {} is not a power of two", *value));
    out_.alignment_ = *value;
    return {};
  }

  Status tensor_info(uint64_t i) {
    where_ = fmt::format("tensor #{}: ", i);
    std::string_view name;
    if (auto s = read_string(name, "name"); !s.ok()) return s;
    if (name.empty()) return invalid(fmt::format("tensor #{} has an empty name", i));
    where_ = fmt::format("tensor '{}': ", gguf_detail::printable(name));
    if (out_.tensor_index_.count(name) != 0)
      return invalid(fmt::format("duplicate tensor name '{}'", gguf_detail::printable(name)));
    uint32_t n_dims = 0;
    if (auto s = read_u32(n_dims, "n_dims"); !s.ok()) return s;
    if (n_dims < 1 || n_dims > kMaxDims)
      return invalid(fmt::format("{}n_dims = {}, expected 1..{}", where_, n_dims, kMaxDims));
    uint64_t ne[kMaxDims] = {};
    int64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (auto s = read_u64(ne[d], "dimension"); !s.ok()) return s;
      if (ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return invalid(
            fmt::format("{}dimension {} = {} is negative as int64", where_, d, static_cast<int64_t>(ne[d])));
      if (__builtin_mul_overflow(n_elements, static_cast<int64_t>(ne[d]), &n_elements))
        return invalid(fmt::format("{}element count overflows int64 (ne[{}] = {})", where_, d, ne[d]));
    }
    uint32_t type_id = 0;
    if (auto s = read_u32(type_id, "type"); !s.ok()) return s;
    const auto dtype = gguf_detail::dtype_from_gguf(type_id);
    if (!dtype) {
      const std::string_view known = gguf_detail::ggml_type_name(type_id);
      if (!known.empty())
        return fail(ErrorCode::Unsupported,
                    fmt::format("tensor '{}' is {} (ggml type {}), a type glass cannot run yet",
                                gguf_detail::printable(name), known, type_id));
      return fail(ErrorCode::Unsupported, fmt::format("unknown or unsupported tensor type {} for tensor '{}'",
                                                      type_id, gguf_detail::printable(name)));
    }
    const auto& tr = graph::traits(*dtype);
    // ggml stores whole blocks per row: the innermost dimension is a multiple of the block size.
    if (ne[0] % static_cast<uint64_t>(tr.block_size) != 0)
      return invalid(fmt::format("{}innermost dimension {} is not a multiple of the {} block size {}", where_,
                                 ne[0], tr.name, tr.block_size));
    const auto nbytes = graph::dtype_bytes(*dtype, static_cast<uint64_t>(n_elements));
    if (!nbytes)
      return invalid(fmt::format("{}byte size of {} {} elements overflows", where_, n_elements, tr.name));
    uint64_t offset = 0;
    if (auto s = read_u64(offset, "data offset"); !s.ok()) return s;

    GgufTensorInfo t;
    t.name = std::string(name);
    for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[d]));
    t.dtype = *dtype;
    t.offset = offset;  // relative until data_ranges() resolves it
    t.nbytes = *nbytes;
    out_.tensor_index_.emplace(name, out_.tensors_.size());
    out_.tensors_.push_back(std::move(t));
    return {};
  }

  // Resolves relative offsets once the data section start is known, then checks each tensor lies
  // in the file and no two overlap.
  Status data_ranges() {
    where_.clear();
    const uint64_t align = out_.alignment_;
    const uint64_t header_end = in_.pos();
    const uint64_t data_start =
        header_end + (align - header_end % align) % align;  // <= size + align: no overflow
    for (auto& t : out_.tensors_) {
      if (t.offset % align != 0)
        return invalid(fmt::format("tensor '{}': data offset {} is not a multiple of the alignment {}",
                                   gguf_detail::printable(t.name), t.offset, align));
      const uint64_t size = file_size();
      uint64_t start = 0;
      uint64_t end = 0;
      if (__builtin_add_overflow(data_start, t.offset, &start) ||
          __builtin_add_overflow(start, t.nbytes, &end))
        return invalid(fmt::format("tensor '{}': data offset {} + {} bytes overflows",
                                   gguf_detail::printable(t.name), t.offset, t.nbytes));
      if (end > size)
        return invalid(
            fmt::format("tensor '{}': data ends at {}, file has {} bytes (data section at {}, offset {}, "
                        "{} bytes)",
                        gguf_detail::printable(t.name), end, size, data_start, t.offset, t.nbytes));
      t.offset += data_start;
      t.data = out_.file_->data() + t.offset;
    }
    std::vector<const GgufTensorInfo*> order;
    order.reserve(out_.tensors_.size());
    for (const auto& t : out_.tensors_)
      if (t.nbytes > 0) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const auto* a = order[k - 1];
      const auto* b = order[k];
      if (b->offset < a->offset + a->nbytes)
        return invalid(fmt::format("tensor '{}' data [{}, {}) overlaps tensor '{}' data [{}, {})",
                                   gguf_detail::printable(b->name), b->offset, b->offset + b->nbytes,
                                   gguf_detail::printable(a->name), a->offset, a->offset + a->nbytes));
    }
    return {};
  }

  GgufFile out_;
  Cursor in_;
  std::string where_;  // "key 'x': " / "tensor 'y': " prefix for messages about the current item
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t nested_items_ = 0;
};

Result<GgufFile> GgufFile::parse(std::shared_ptr<const MappedFile> file) {
  GLASS_CHECK(file != nullptr);
  return GgufParser(std::move(file)).run();
}

Result<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.error();
  return parse(std::move(file).value());
}

}  // namespace glass::formats
