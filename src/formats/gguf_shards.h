#pragma once
// A GGUF model as it is downloaded: one file, or the shards llama.cpp's gguf-split writes
// (PREFIX-00001-of-00003.gguf ...: each a whole GGUF whose keys split.no (0-based), split.count and
// split.tensors.count (the tensors of all shards) tie them together; the first shard holds the
// model's metadata, every shard its own tensors), or a folder holding either (a hub snapshot).
// Every shard is mapped and validated as GgufFile does, then checked against the others before any
// tensor is used; the tensors stay in their mappings, so the model's weights are never copied.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "formats/mapped_file.h"
#include "glass/result.h"

namespace glass::formats {

// llama.cpp's LLM_KV_SPLIT_* keys.
inline constexpr std::string_view kSplitNo = "split.no";                       // u16, 0-based
inline constexpr std::string_view kSplitCount = "split.count";                 // u16
inline constexpr std::string_view kSplitTensorsCount = "split.tensors.count";  // i32

// A shard's file name, dir/PREFIX-00002-of-00003.gguf: prefix dir/PREFIX, no 1 (0-based), count 3.
struct SplitName {
  std::filesystem::path prefix;
  uint32_t no = 0;
  uint32_t count = 0;
};
// nullopt unless the name is exactly what split_path writes for some no < count.
std::optional<SplitName> parse_split_name(const std::filesystem::path& path);
// PREFIX-%05d-of-%05d.gguf with the 1-based shard number, as llama.cpp names shards.
std::filesystem::path split_path(const std::filesystem::path& prefix, uint32_t no, uint32_t count);

class GgufShards {
 public:
  // `path` is a GGUF file (any shard of a split model finds the others by name), or a folder:
  // find_gguf_model picks its file. Errors name the file and key at fault: InvalidFile for a shard
  // missing (with its expected path), a split.count the shards disagree on, a split.no that is not
  // the one its name says (two shards claiming one number), a tensor in two shards, or tensors
  // counted over the shards that are not split.tensors.count; GgufFile::open's errors otherwise.
  static Result<GgufShards> open(const std::filesystem::path& path);

  // The model's metadata: the first shard (the only file of an unsplit model).
  const GgufFile& metadata() const { return shards_.front(); }
  // The same, moved out (the model keeps it; the shards' mappings live on in their tensors' users).
  GgufFile take_metadata() && { return std::move(shards_.front()); }
  // In split.no order.
  const std::vector<GgufFile>& files() const { return shards_; }
  // Every shard's tensors, shard by shard in file order; valid while this object lives.
  std::vector<const GgufTensorInfo*> tensors() const;
  std::vector<std::shared_ptr<const MappedFile>> mappings() const;
  uint64_t file_bytes() const;  // all shards together

 private:
  explicit GgufShards(std::vector<GgufFile> shards) : shards_(std::move(shards)) {}
  std::vector<GgufFile> shards_;
};

// The model file of a folder (a hub GGUF snapshot): its one *.gguf, or the first shard of its one
// split set, searched level by level down to four folders deep (hidden folders and links to folders
// skipped): the shallowest level holding a model decides. Files with "mmproj" in their name (vision
// projectors) are not models. InvalidArgument naming the folder when it holds none, or listing the
// candidates (relative to it) when the deciding level holds several.
Result<std::filesystem::path> find_gguf_model(const std::filesystem::path& dir);

}  // namespace glass::formats
