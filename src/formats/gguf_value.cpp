// GgufValue decoding and printing, and the GGUF tensor type table.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "formats/gguf.h"
#include "formats/gguf_detail.h"

namespace glass::formats {
namespace {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

constexpr std::array<std::string_view, 13> kTypeNames = {
    "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Strings are printed quoted, with quotes, backslashes and control bytes escaped, so a dump of an
// untrusted file cannot inject terminal escapes or fake lines.
void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_value(std::string& out, const GgufValue& v, size_t max_items) {
  switch (v.type) {
    case GgufValueType::U8:
    case GgufValueType::U16:
    case GgufValueType::U32:
    case GgufValueType::U64:
      out += std::to_string(v.u64);
      return;
    case GgufValueType::I8:
    case GgufValueType::I16:
    case GgufValueType::I32:
    case GgufValueType::I64:
      out += std::to_string(v.i64);
      return;
    case GgufValueType::F32:
      out += fmt::format("{}", static_cast<float>(v.f64));
      return;
    case GgufValueType::F64:
      out += fmt::format("{}", v.f64);
      return;
    case GgufValueType::BOOL:
      out += v.u64 ? "true" : "false";
      return;
    case GgufValueType::STRING:
      append_quoted(out, v.str);
      return;
    case GgufValueType::ARRAY: {
      out += '[';
      const uint64_t shown = std::min<uint64_t>(v.count, max_items);
      for (uint64_t i = 0; i < shown; ++i) {
        if (i > 0) out += ", ";
        append_value(out, v.element(i), max_items);
      }
      if (shown < v.count) out += fmt::format("{}... ({} items)", shown > 0 ? ", " : "", v.count);
      out += ']';
      return;
    }
  }
  out += "<invalid>";
}

}  // namespace

std::string_view gguf_type_name(GgufValueType type) {
  const auto i = static_cast<uint32_t>(type);
  return i < kTypeNames.size() ? kTypeNames[i] : "invalid";
}

GgufValue GgufValue::element(uint64_t i) const {
  GLASS_CHECK(type == GgufValueType::ARRAY && i < count);
  if (elem_type == GgufValueType::ARRAY) return items[i];
  if (elem_type == GgufValueType::STRING) {
    GgufValue v;
    v.type = GgufValueType::STRING;
    v.str = strings[i];
    return v;
  }
  return gguf_detail::decode_scalar(elem_type, raw + i * gguf_detail::scalar_size(elem_type));
}

std::string gguf_value_to_string(const GgufValue& value, size_t max_items) {
  std::string out;
  append_value(out, value, max_items);
  return out;
}

namespace gguf_detail {

std::string printable(std::string_view name) {
  constexpr size_t kMaxShown = 96;
  std::string out;
  for (size_t i = 0; i < name.size() && i < kMaxShown; ++i) {
    const auto u = static_cast<unsigned char>(name[i]);
    if (u < 0x20 || u >= 0x7f || u == '\\') {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += name[i];
    }
  }
  if (name.size() > kMaxShown) out += "...";
  return out;
}

bool valid_value_type(uint32_t type) { return type < kTypeNames.size(); }

uint64_t scalar_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::U8:
    case GgufValueType::I8:
    case GgufValueType::BOOL:
      return 1;
    case GgufValueType::U16:
    case GgufValueType::I16:
      return 2;
    case GgufValueType::U32:
    case GgufValueType::I32:
    case GgufValueType::F32:
      return 4;
    case GgufValueType::U64:
    case GgufValueType::I64:
    case GgufValueType::F64:
      return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY:
      return 0;
  }
  return 0;
}

GgufValue decode_scalar(GgufValueType type, const uint8_t* p) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufValueType::U8:
    case GgufValueType::BOOL:
      v.u64 = p[0];
      break;
    case GgufValueType::U16:
      v.u64 = load<uint16_t>(p);
      break;
    case GgufValueType::U32:
      v.u64 = load<uint32_t>(p);
      break;
    case GgufValueType::U64:
      v.u64 = load<uint64_t>(p);
      break;
    case GgufValueType::I8:
      v.i64 = load<int8_t>(p);
      break;
    case GgufValueType::I16:
      v.i64 = load<int16_t>(p);
      break;
    case GgufValueType::I32:
      v.i64 = load<int32_t>(p);
      break;
    case GgufValueType::I64:
      v.i64 = load<int64_t>(p);
      break;
    case GgufValueType::F32:
      v.f64 = load<float>(p);
      break;
    case GgufValueType::F64:
      v.f64 = load<double>(p);
      break;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY:
      GLASS_CHECK(false && "decode_scalar on a non-scalar type");
  }
  return v;
}

std::optional<graph::DType> dtype_from_gguf(uint32_t ggml_type) {
  using graph::DType;
  // ggml_type numbering (ggml.h); ids 4 and 5 (old Q4_2/Q4_3) are retired, the rest are types
  // glass has no kernels for.
  switch (ggml_type) {
    case 0:
      return DType::F32;
    case 1:
      return DType::F16;
    case 2:
      return DType::Q4_0;
    case 3:
      return DType::Q4_1;
    case 6:
      return DType::Q5_0;
    case 7:
      return DType::Q5_1;
    case 8:
      return DType::Q8_0;
    case 10:
      return DType::Q2_K;
    case 11:
      return DType::Q3_K;
    case 12:
      return DType::Q4_K;
    case 13:
      return DType::Q5_K;
    case 14:
      return DType::Q6_K;
    case 20:
      return DType::IQ4_NL;
    case 23:
      return DType::IQ4_XS;
    case 24:
      return DType::I8;
    case 26:
      return DType::I32;
    case 30:
      return DType::BF16;
    case 39:
      return DType::MXFP4;
    default:
      return std::nullopt;
  }
}

std::string_view ggml_type_name(uint32_t ggml_type) {
  // ggml.h's enum ggml_type at llama.cpp 3f545bec; retired ids (4, 5, 31-33, 36-38) have no name.
  constexpr std::string_view kNames[] = {
      "F32",   "F16",    "Q4_0",  "Q4_1", "",     "",        "Q5_0",   "Q5_1",    "Q8_0",  "Q8_1",   "Q2_K",
      "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
      "IQ2_S", "IQ4_XS", "I8",    "I16",  "I32",  "I64",     "F64",    "IQ1_M",   "BF16",  "",       "",
      "",      "TQ1_0",  "TQ2_0", "",     "",     "",        "MXFP4",  "NVFP4",   "Q1_0",  "Q2_0"};
  return ggml_type < std::size(kNames) ? kNames[ggml_type] : std::string_view{};
}

std::optional<uint32_t> gguf_from_dtype(graph::DType dtype) {
  constexpr uint32_t kLastId = 40;  // above every id dtype_from_gguf knows: one table, read backwards
  for (uint32_t id = 0; id <= kLastId; ++id)
    if (dtype_from_gguf(id) == dtype) return id;
  return std::nullopt;
}

}  // namespace gguf_detail
}  // namespace glass::formats
