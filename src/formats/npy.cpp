// NPY layout: "\x93NUMPY" | u8 major | u8 minor | header length (u16 in v1, u32 in v2) |
// header: a Python dict literal, e.g. "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 512), }",
// padded with spaces and ended by '\n' | the raw array bytes.
#include "formats/npy.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "formats/mapped_file.h"
#include "formats/output_file.h"

namespace glass {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Real headers are ~120 bytes; numpy itself refuses to read more than 10000 by default.
constexpr uint64_t kMaxHeaderLen = 1 << 16;
constexpr int kMaxDims = 32;  // numpy's NPY_MAXDIMS

Error npy_error(ErrorCode code, const std::string& path, const std::string& msg) {
  return make_error(code, fmt::format("npy: {}: {}", path, msg));
}

// Element count of `shape`, or -1 when a dimension is negative or the product overflows int64.
int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

// A tiny reader for the header dict: exactly the three keys numpy writes, in any order.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  // Fills descr, fortran, shape; returns an empty string or what was wrong.
  std::string parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    if (!eat('{')) return "expected '{'";
    while (true) {
      skip_space();
      if (eat('}')) break;
      std::string key;
      if (!quoted(key)) return "expected a quoted key";
      if (!eat(':')) return "expected ':' after '" + key + "'";
      skip_space();
      if (key == "descr") {
        if (!quoted(descr)) return "expected a quoted descr";
        have_descr = true;
      } else if (key == "fortran_order") {
        if (word("True"))
          fortran = true;
        else if (word("False"))
          fortran = false;
        else
          return "expected True or False for fortran_order";
        have_fortran = true;
      } else if (key == "shape") {
        if (auto err = tuple(shape); !err.empty()) return err;
        have_shape = true;
      } else {
        return "unexpected key '" + key + "'";
      }
      skip_space();
      if (!eat(',')) {
        skip_space();
        if (!eat('}')) return "expected ',' or '}'";
        break;
      }
    }
    skip_space();
    if (pos_ != s_.size()) return "trailing bytes after the dict";
    if (!have_descr || !have_fortran || !have_shape) return "missing descr, fortran_order or shape";
    return {};
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n')) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  bool quoted(std::string& out) {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) return false;
    out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return true;
  }
  std::string tuple(std::vector<int64_t>& shape) {
    if (!eat('(')) return "expected '(' for shape";
    while (true) {
      skip_space();
      if (eat(')')) return {};
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9')
        return "expected a non-negative integer in shape";
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s_[pos_] - '0', &v))
          return "shape dimension overflows int64";
        ++pos_;
      }
      // numpy writes "3L" in files from Python 2.
      if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;
      if (static_cast<int>(shape.size()) >= kMaxDims) return "shape has more than 32 dimensions";
      shape.push_back(v);
      if (!eat(',')) {
        if (!eat(')')) return "expected ',' or ')' in shape";
        return {};
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string make_header(const std::vector<int64_t>& shape) {
  std::string dims;
  for (int64_t d : shape) dims += fmt::format("{}, ", d);
  if (shape.size() > 1) dims.resize(dims.size() - 2);  // "(64, 512)"; a 1-d shape keeps "(n,)"
  if (shape.size() == 1) dims.resize(dims.size() - 1);
  std::string h = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", dims);
  // Pad with spaces so magic (6) + version (2) + length (2) + header, ending in '\n', is a multiple of 64.
  const size_t total = kMagicLen + 2 + 2 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  return h;
}

}  // namespace

Status write_npy_f32(const std::filesystem::path& path, const float* data,
                     const std::vector<int64_t>& shape) {
  const std::string p = path.string();
  const int64_t n = element_count(shape);
  if (n < 0 || static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / sizeof(float))
    return npy_error(ErrorCode::InvalidArgument, p, "shape has a negative dimension or too many elements");
  const std::string header = make_header(shape);
  if (header.size() > std::numeric_limits<uint16_t>::max())
    return npy_error(ErrorCode::InvalidArgument, p, "shape too long for an NPY v1.0 header");
  // Written through a temporary file renamed over the target when complete (output_file.h).
  auto f = OutputFile::create(path, "npy");
  if (!f.ok()) return f.error();
  const uint8_t prefix[10] = {0x93,
                              'N',
                              'U',
                              'M',
                              'P',
                              'Y',
                              1,
                              0,
                              static_cast<uint8_t>(header.size() & 0xff),
                              static_cast<uint8_t>(header.size() >> 8)};
  const auto bytes = static_cast<size_t>(n) * sizeof(float);
  if (Status st = f->write(prefix, sizeof(prefix)); !st.ok()) return st;
  if (Status st = f->write(header.data(), header.size()); !st.ok()) return st;
  if (bytes > 0)
    if (Status st = f->write(data, bytes); !st.ok()) return st;
  return f->commit();
}

Result<NpyArray> read_npy_f32(const std::filesystem::path& path) {
  auto mapped = formats::MappedFile::open(path);
  if (!mapped.ok()) return mapped.error();
  const formats::MappedFile& file = **mapped;
  return parse_npy_f32(std::span<const uint8_t>(file.data(), file.size()), file.path());
}

Result<NpyArray> parse_npy_f32(std::span<const uint8_t> bytes, std::string_view name) {
  const std::string p(name);
  const uint8_t* b = bytes.data();
  const uint64_t size = bytes.size();
  if (size < kMagicLen + 2 || std::memcmp(b, kMagic, kMagicLen) != 0)
    return npy_error(ErrorCode::InvalidFile, p, "bad magic: expected \\x93NUMPY");
  const uint8_t major = b[6];
  if (major != 1 && major != 2)
    return npy_error(ErrorCode::Unsupported, p,
                     fmt::format("unsupported NPY version {}.{} (supported: 1.x, 2.x)", major, b[7]));
  const uint64_t len_bytes = major == 1 ? 2 : 4;
  if (size < kMagicLen + 2 + len_bytes)
    return npy_error(ErrorCode::InvalidFile, p, "truncated header length");
  uint64_t header_len = 0;
  for (uint64_t i = 0; i < len_bytes; ++i)
    header_len |= static_cast<uint64_t>(b[kMagicLen + 2 + i]) << (8 * i);
  const uint64_t data_start = kMagicLen + 2 + len_bytes + header_len;
  if (header_len > kMaxHeaderLen || data_start > size)
    return npy_error(ErrorCode::InvalidFile, p,
                     fmt::format("header length {} exceeds the file ({} bytes)", header_len, size));
  std::string_view header(reinterpret_cast<const char*>(b + kMagicLen + 2 + len_bytes), header_len);
  std::string descr;
  bool fortran = false;
  NpyArray out;
  if (auto err = HeaderParser(header).parse(descr, fortran, out.shape); !err.empty())
    return npy_error(ErrorCode::InvalidFile, p, "bad header: " + err);
  if (descr != "<f4")
    return npy_error(ErrorCode::Unsupported, p,
                     fmt::format("dtype '{}' is not supported, expected '<f4'", descr));
  if (fortran)
    return npy_error(ErrorCode::Unsupported, p, "fortran_order arrays are not supported, expected C order");
  const int64_t n = element_count(out.shape);
  if (n < 0 || static_cast<uint64_t>(n) > (size - data_start) / sizeof(float) ||
      static_cast<uint64_t>(n) * sizeof(float) != size - data_start)
    return npy_error(ErrorCode::InvalidFile, p,
                     fmt::format("data is {} bytes, shape needs {} floats", size - data_start,
                                 n < 0 ? std::string("too many") : std::to_string(n)));
  out.data.resize(static_cast<size_t>(n));
  if (n > 0) std::memcpy(out.data.data(), b + data_start, static_cast<size_t>(n) * sizeof(float));
  return out;
}

}  // namespace glass
