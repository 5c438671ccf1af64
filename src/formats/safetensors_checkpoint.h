#pragma once
// A Hugging Face checkpoint's weights: one model.safetensors, or shards listed by
// model.safetensors.index.json ({"metadata": {"total_size": N}, "weight_map": {tensor: shard}}).
// The index is validated as a whole before any tensor is used: shard names are plain file names,
// every shard exists (all missing ones are named at once), each parses (safetensors.h), and the
// weight_map covers the shards exactly: every listed tensor is in the shard it names, every tensor
// of every shard is listed for that shard, no tensor is listed twice or stored in two shards, and
// total_size equals the sum of the listed tensors' bytes. All coverage problems are reported in one
// error.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "formats/safetensors.h"
#include "glass/result.h"

namespace glass::formats {

inline constexpr const char* kSafetensorsSingle = "model.safetensors";
inline constexpr const char* kSafetensorsIndex = "model.safetensors.index.json";

class SafetensorsCheckpoint {
 public:
  SafetensorsCheckpoint(const SafetensorsCheckpoint&) = delete;  // tensors() points into shards_
  SafetensorsCheckpoint& operator=(const SafetensorsCheckpoint&) = delete;
  SafetensorsCheckpoint(SafetensorsCheckpoint&&) = default;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) = default;

  // `dir` holds model.safetensors, or model.safetensors.index.json and its shards (transformers
  // looks for the single file first, and so does this). Neither: InvalidFile saying what is there.
  static Result<SafetensorsCheckpoint> open(const std::filesystem::path& dir);
  // A sharded checkpoint from its index file.
  static Result<SafetensorsCheckpoint> open_index(const std::filesystem::path& index);

  // Every tensor by name (pointers into shards(), stable for the checkpoint's life).
  const std::map<std::string, const SafetensorsTensor*, std::less<>>& tensors() const { return tensors_; }
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  uint64_t file_bytes() const;  // all shard files together

 private:
  SafetensorsCheckpoint() = default;
  std::vector<SafetensorsFile> shards_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> tensors_;
};

}  // namespace glass::formats
