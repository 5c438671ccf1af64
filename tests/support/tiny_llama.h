#pragma once
// A tiny random-weight llama GGUF written on the fly, for tests of loading rules that need a file
// to differ from a valid one in exactly one place (a key dropped, a tensor missing or mis-shaped).
#include <filesystem>
#include <set>
#include <string>

namespace glass::test {

struct TinyLlamaSpec {
  std::set<std::string> drop_keys;     // metadata keys to leave out
  std::set<std::string> drop_tensors;  // tensors to leave out
  std::string bad_shape_tensor;        // this tensor gets one extra row
  std::string architecture = "llama";
  int n_heads = 2;
  int n_kv_heads = 1;
};

// Writes the file under a temporary folder and returns its path. dim 8, 1 layer, ffn 16, vocab 8.
std::filesystem::path write_tiny_llama(const TinyLlamaSpec& spec, const std::string& file_name);

}  // namespace glass::test
