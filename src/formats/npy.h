#pragma once
// NumPy .npy files of float32, the format of the reference logits (fixtures/reference/*.npy) and of
// tensor dumps for comparison in Python. Only little-endian '<f4' in C order is read or written.
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "glass/result.h"

namespace glass::formats {

// Writes NPY v1.0: magic, header dict, '\n'-terminated and space-padded so the data starts at a
// multiple of 64 bytes, then the floats. Errors: InvalidArgument for a negative dimension or an
// element count that overflows; Io naming the path and errno text.
Status write_npy_f32(const std::filesystem::path& path, const float* data, const std::vector<int64_t>& shape);

struct NpyArray {
  std::vector<int64_t> shape;  // empty for a 0-d array (one element)
  std::vector<float> data;     // C order
};

// Reads NPY v1.x/v2.x holding '<f4' in C order. The header is validated and the data size must
// match the shape exactly before anything is allocated. Errors: InvalidFile / Unsupported naming the
// path and what was expected versus found; Io for the file itself.
Result<NpyArray> read_npy_f32(const std::filesystem::path& path);
// The same from bytes in memory; `name` stands in for the path in messages.
Result<NpyArray> parse_npy_f32(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace glass::formats
