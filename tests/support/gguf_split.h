#pragma once
// Splits a GGUF into shards as llama.cpp's gguf-split writes them, for tests of split loading:
// shard i is PREFIX-{i+1:05}-of-{n:05}.gguf with split.no = i, split.count = n and
// split.tensors.count = every tensor; the first shard also holds all the model's metadata, each
// shard its run of the tensors in file order. The tweaks make one shard wrong in one way.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace glass::test {

struct SplitSpec {
  // Shard i holds tensors [starts[i], starts[i + 1]) of the input (the last up to the end);
  // starts[0] is 0. {0, 0, k} leaves the first shard without tensors (--no-tensor-first-split).
  std::vector<size_t> starts;
  std::map<uint32_t, uint32_t> split_no;     // shard -> the split.no written instead of its own
  std::map<uint32_t, uint32_t> split_count;  // shard -> the split.count written instead
  std::optional<int32_t> tensors_count;      // split.tensors.count instead of the input's count
  std::map<uint32_t, std::string> also;      // shard -> a tensor of another shard written here too
};

// Writes the shards of `in` beside `prefix` (PREFIX-00001-of-0000N.gguf, ...); returns their paths.
std::vector<std::filesystem::path> write_gguf_split(const std::filesystem::path& in,
                                                    const std::filesystem::path& prefix,
                                                    const SplitSpec& spec);

// The repository's stories260K.gguf (a small llama with a vocabulary).
std::filesystem::path stories260k();

}  // namespace glass::test
