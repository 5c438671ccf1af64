#pragma once
// A test-only safetensors writer: valid files (tensors laid out in order, header padded to 8 bytes
// like the reference writer) and, through explicit offsets, raw header text and byte patches,
// malformed ones. Also helpers for HF model directories in a temp folder.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::test {

class SafetensorsWriter {
 public:
  struct Tensor {
    std::string name;
    std::string dtype;  // "F32", "BF16", ...
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
    std::optional<std::array<uint64_t, 2>> offsets;  // default: the next position in the buffer
  };

  SafetensorsWriter& tensor(Tensor t);
  SafetensorsWriter& tensor_f32(std::string name, std::vector<int64_t> shape,
                                const std::vector<float>& values);
  // Zero-filled F32 data of the shape's size.
  SafetensorsWriter& zeros_f32(std::string name, std::vector<int64_t> shape);
  SafetensorsWriter& metadata(std::string key, std::string value);

  std::string header() const;          // the JSON header
  std::vector<uint8_t> build() const;  // u64 length | header | data
  // A file from a given header text and data buffer (for malformed headers).
  static std::vector<uint8_t> from_header(std::string_view header, const std::vector<uint8_t>& data);

 private:
  std::vector<Tensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// A fresh, empty directory under the test temp dir.
std::filesystem::path make_temp_dir(std::string_view name);
void write_bytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes);
void write_text(const std::filesystem::path& path, std::string_view text);

}  // namespace glass::test
