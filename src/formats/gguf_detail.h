#pragma once
// Internals shared by the GGUF reader files: value type sizes and decoding, and the GGUF tensor
// type ids glass reads.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "formats/gguf.h"
#include "graph/dtype.h"

namespace glass::formats::gguf_detail {

// True for the 13 value types the format defines.
bool valid_value_type(uint32_t type);
// Bytes of one packed scalar (BOOL is 1 byte); 0 for STRING and ARRAY.
uint64_t scalar_size(GgufValueType type);
// Decodes a packed little-endian scalar of a type with scalar_size(type) > 0.
GgufValue decode_scalar(GgufValueType type, const uint8_t* bytes);

// A key or tensor name from the file, made safe for a message: control, non-ASCII and backslash
// bytes as \xNN, cut after 96 bytes with "...".
std::string printable(std::string_view name);

// ggml tensor type id -> DType for the types glass supports; nullopt otherwise.
std::optional<graph::DType> dtype_from_gguf(uint32_t ggml_type);
// ggml's name of a tensor type id ("MXFP4", "IQ4_XS"), for the types glass cannot run yet; empty
// for ids ggml does not define.
std::string_view ggml_type_name(uint32_t ggml_type);
// The inverse: the ggml type id of a DType glass reads (nullopt for none).
std::optional<uint32_t> gguf_from_dtype(graph::DType dtype);

}  // namespace glass::formats::gguf_detail
