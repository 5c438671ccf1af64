#pragma once
// GGUF (llama.cpp's model file, versions 2 and 3, little-endian) read from a memory mapping. The
// file is untrusted: open()/parse() validate every count, length, type, shape, size, alignment and
// data range before using or allocating from it, and fail with a message naming the file, the
// key or tensor and expected versus got. Tensor data is never copied: GgufTensorInfo::data points
// into the mapping, which every copy of the GgufFile keeps alive.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "formats/mapped_file.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

// Metadata value types, numbered as in the file.
enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u32", "string", "array", ...; "invalid" for a number outside the enum.
std::string_view gguf_type_name(GgufValueType type);

// The elements of a string array, read in place from the mapping (each is an 8-byte length and its
// bytes). Walking them in order costs nothing to store; element(i) walks from the nearest of one
// checkpoint per kStride elements. Views of every element took 16 bytes each (a 3-million-token
// vocabulary's 48 MB). Valid while the mapping lives; the parser has checked every length.
class GgufStrings {
 public:
  static constexpr size_t kStride = 16;

  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  // const, so that assigning to an element (a temporary view) does not compile.
  const std::string_view operator[](size_t i) const {  // NOLINT(readability-const-return-type)
    const uint8_t* p = checkpoints_[i / kStride];
    for (size_t k = i % kStride; k > 0; --k) p += 8 + length_at(p);
    return view_at(p);
  }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    const_iterator() = default;
    const_iterator(const uint8_t* p, size_t i) : p_(p), i_(i) {}
    std::string_view operator*() const { return view_at(p_); }
    const_iterator& operator++() {
      p_ += 8 + length_at(p_);
      ++i_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }

   private:
    const uint8_t* p_ = nullptr;
    size_t i_ = 0;
  };
  const_iterator begin() const { return {empty() ? nullptr : checkpoints_[0], 0}; }
  const_iterator end() const { return {nullptr, count_}; }

 private:
  friend class GgufParser;
  static uint64_t length_at(const uint8_t* p) {
    uint64_t len = 0;
    std::memcpy(&len, p, 8);  // little-endian
    return len;
  }
  static std::string_view view_at(const uint8_t* p) {
    return {reinterpret_cast<const char*>(p + 8), static_cast<size_t>(length_at(p))};
  }
  size_t count_ = 0;
  std::vector<const uint8_t*> checkpoints_;  // the length prefix of elements 0, kStride, 2 kStride, ...
};

// One metadata value. Strings and packed numeric arrays are views into the mapping (no copy of a
// 150k-entry vocabulary's scores), valid while the GgufFile that produced them (or a copy) lives.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;
  // Scalars, widened; only the member for `type` is set: U8/U16/U32/U64/BOOL -> u64,
  // I8/I16/I32/I64 -> i64, F32/F64 -> f64 (exact).
  uint64_t u64 = 0;
  int64_t i64 = 0;
  double f64 = 0;
  std::string_view str;  // STRING (not NUL-terminated)

  // ARRAY: `count` elements of `elem_type`. Numeric and BOOL elements stay packed little-endian at
  // `raw` (use element()); STRING elements are in `strings`, ARRAY elements in `items`.
  GgufValueType elem_type = GgufValueType::U8;
  uint64_t count = 0;
  const uint8_t* raw = nullptr;
  GgufStrings strings;
  std::vector<GgufValue> items;

  // Element i (< count) of an ARRAY as a value of elem_type.
  GgufValue element(uint64_t i) const;
};

// For printing (CLI dumps, error messages): scalars as text, strings quoted and escaped, arrays as
// "[a, b, ... (n items)]" with at most max_items elements shown.
std::string gguf_value_to_string(const GgufValue& value, size_t max_items = 8);

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // row-major, outermost first (GGUF's ne[] reversed): [n_vocab, dim]
  graph::DType dtype = graph::DType::F32;
  uint64_t offset = 0;  // absolute file offset of the data
  uint64_t nbytes = 0;
  const void* data = nullptr;  // points into the mapping
};

class GgufParser;

class GgufFile {
 public:
  // Maps and parses `path`, validating everything (see parse).
  static Result<GgufFile> open(const std::filesystem::path& path);
  // Parses an existing mapping. Errors: InvalidFile (bad or truncated content), Unsupported (a
  // version, endianness or tensor type glass does not read).
  static Result<GgufFile> parse(std::shared_ptr<const MappedFile> file);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& path() const { return file_->path(); }
  const std::shared_ptr<const MappedFile>& mapping() const { return file_; }

  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  // Typed getters. A missing key or a value of the wrong type or range is an InvalidFile error
  // naming the file, the key, and expected versus got.
  Result<std::string> get_string(std::string_view key) const;
  Result<uint32_t> get_u32(std::string_view key) const;  // any integer type whose value fits
  Result<float> get_f32(std::string_view key) const;     // F32, F64 or an integer
  Result<bool> get_bool(std::string_view key) const;
  Result<std::vector<std::string>> get_string_array(std::string_view key) const;
  // The same strings as views into the file's mapping, valid while this file lives (no copies: a
  // merge list of millions of entries costs its views only).
  Result<const GgufStrings*> get_string_views(std::string_view key) const;
  Result<std::vector<float>> get_f32_array(std::string_view key) const;    // F32, F64 or integer elements
  Result<std::vector<int32_t>> get_i32_array(std::string_view key) const;  // integer elements that fit

  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }  // file order
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }                       // file order
  const GgufTensorInfo* find_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  Error error(const std::string& message) const;
  Result<const GgufValue*> require(std::string_view key, GgufValueType type) const;
  Result<const GgufValue*> require_array(std::string_view key) const;

  std::shared_ptr<const MappedFile> file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  // Names are views of the key / tensor-name bytes in the mapping, so copies of a GgufFile share
  // them safely.
  std::unordered_map<std::string_view, size_t> key_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace glass::formats
