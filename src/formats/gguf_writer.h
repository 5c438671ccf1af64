#pragma once
// Writing GGUF v3 files (the layout gguf_reader.cpp documents): metadata values as GgufFile
// returns them (so a file's metadata is copied by passing GgufFile::metadata() through), tensor
// infos with their data offsets computed from the shapes and types, then the tensor data streamed
// in order. The file appears under its name only when finish() succeeds: data goes to a fresh
// temporary file beside it (output_file.h: exclusive, never through a symlink), which finish()
// renames, so a failed or interrupted write never leaves a truncated file that looks valid and
// never writes anywhere but the target.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "formats/output_file.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

struct GgufTensorSpec {
  std::string name;
  std::vector<int64_t> shape;  // outermost first, as GgufTensorInfo
  graph::DType dtype = graph::DType::F32;
};

class GgufWriter {
 public:
  // Validates the specs (shapes positive, innermost dimension a multiple of the type's block
  // size, unique names, a power-of-two alignment), then writes everything up to the data.
  // Errors: InvalidArgument naming the tensor or key; Io naming the file.
  static Result<GgufWriter> create(const std::filesystem::path& path,
                                   const std::vector<std::pair<std::string, GgufValue>>& metadata,
                                   std::vector<GgufTensorSpec> tensors, uint64_t alignment);

  // Bytes of tensor i's data (without padding).
  uint64_t tensor_bytes(size_t i) const { return sizes_[i]; }

  // Appends data of the current tensor (tensors in spec order, each in one or more pieces). An
  // InvalidArgument error when more bytes come than the tensor holds.
  Status write(const void* data, uint64_t n);
  // Checks that every tensor got all its bytes, pads, closes and renames the file into place.
  Status finish();

  // Destroyed unfinished, the temporary file is removed (OutputFile).

 private:
  GgufWriter() = default;
  Status put(const void* data, uint64_t n);
  Status pad_to_alignment();

  std::filesystem::path path_;
  std::optional<OutputFile> file_;
  std::vector<GgufTensorSpec> tensors_;
  std::vector<uint64_t> sizes_;
  uint64_t alignment_ = 32;
  uint64_t pos_ = 0;      // bytes written so far
  size_t current_ = 0;    // the tensor receiving data
  uint64_t written_ = 0;  // bytes of the current tensor written
};

}  // namespace glass::formats
