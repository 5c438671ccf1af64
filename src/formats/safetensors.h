#pragma once
// safetensors (Hugging Face's weight file), read from a memory mapping. Layout:
//   u64 N (little-endian) | N bytes of JSON header | data buffer
// The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative
// to the data buffer) plus an optional "__metadata__" object of strings. The file is untrusted:
// parse() checks the header length against the file and a 100 MB bound, the JSON (well-formed, an
// object, no repeated key), every dtype (known), shape (non-negative, no overflow), that shape x
// dtype size equals the data_offsets span, that every range lies in the file, and that no two
// ranges overlap, all before any tensor is used. Tensor data is never read at open: the handles
// point into the mapping and pages load when a kernel first touches them (lazy per tensor).
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "formats/mapped_file.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::formats {

inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;  // the format's own bound

struct SafetensorsTensor {
  std::string name;
  std::string dtype;                        // as the file spells it: "F32", "BF16", "I64", ...
  std::optional<graph::DType> graph_dtype;  // nullopt: a dtype glass does not compute with
  std::vector<int64_t> shape;               // row-major, outermost first (as in the file)
  uint64_t offset = 0;                      // absolute file offset of the data
  uint64_t nbytes = 0;
  const void* data = nullptr;  // points into the mapping
};

// Element i of a float tensor (graph_dtype F32, F16 or BF16; the caller checks) as f32.
float float_element(const SafetensorsTensor& t, uint64_t i);

class SafetensorsFile {
 public:
  // Maps and parses `path` (see parse).
  static Result<SafetensorsFile> open(const std::filesystem::path& path);
  // Errors: InvalidFile naming the file and the tensor or field at fault; Unsupported for a dtype
  // glass knows but cannot use in place (sub-byte types) or data not aligned to its element size.
  static Result<SafetensorsFile> parse(std::shared_ptr<const MappedFile> file);

  const std::string& path() const { return file_->path(); }
  uint64_t file_size() const { return file_->size(); }
  const std::shared_ptr<const MappedFile>& mapping() const { return file_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // by data offset
  const SafetensorsTensor* find(std::string_view name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  friend class SafetensorsParser;
  std::shared_ptr<const MappedFile> file_;
  std::vector<SafetensorsTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace glass::formats
