#pragma once
// A tiny random-weight llama GGUF written on the fly, for tests of loading rules that need a file
// to differ from a valid one in exactly one place (a key dropped, a tensor missing or mis-shaped).
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace glass::test {

struct TinyLlamaSpec {
  std::set<std::string> drop_keys;     // metadata keys to leave out
  std::set<std::string> drop_tensors;  // tensors to leave out
  std::string bad_shape_tensor;        // this tensor gets one extra row
  std::string architecture = "llama";
  int n_heads = 2;
  int n_kv_heads = 1;
  uint32_t context_length = 32;  // llama.context_length
};

// Writes the file under a temporary folder and returns its path. dim 8, 1 layer, ffn 16, vocab 8.
std::filesystem::path write_tiny_llama(const TinyLlamaSpec& spec, const std::string& file_name);

// The tensors of llama layer 0 in GGUF's order, through the caller's writer:
// tensor(name, shape, is_norm).
template <class Tensor>
void add_llama_layer0(Tensor&& tensor, int64_t dim, int64_t kv_dim, int64_t ffn) {
  tensor("blk.0.attn_norm.weight", std::vector<int64_t>{dim}, true);
  tensor("blk.0.attn_q.weight", std::vector<int64_t>{dim, dim}, false);
  tensor("blk.0.attn_k.weight", std::vector<int64_t>{kv_dim, dim}, false);
  tensor("blk.0.attn_v.weight", std::vector<int64_t>{kv_dim, dim}, false);
  tensor("blk.0.attn_output.weight", std::vector<int64_t>{dim, dim}, false);
  tensor("blk.0.ffn_norm.weight", std::vector<int64_t>{dim}, true);
  tensor("blk.0.ffn_gate.weight", std::vector<int64_t>{ffn, dim}, false);
  tensor("blk.0.ffn_up.weight", std::vector<int64_t>{ffn, dim}, false);
  tensor("blk.0.ffn_down.weight", std::vector<int64_t>{dim, ffn}, false);
}

}  // namespace glass::test
