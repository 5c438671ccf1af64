#pragma once
// What glass synth writes a GGUF from: a named real shape (cmd_synth.cpp lists them), the tensors
// and keys of its architecture (synth_families.cpp, synth_gemma4.cpp), and the byte writers.
#include <cstdint>
#include <string>
#include <vector>

namespace glass::cli::synth {

// A real model's published text configuration. llama shapes use the first block; gemma3n shapes
// (Gemma 3n E2B / E4B, the text model of google/gemma-3n-E*B as llama.cpp converts it) the second.
struct Shape {
  const char* name;
  const char* arch;  // GGUF general.architecture: "llama", "smollm3", "lfm2" or "gemma3n"
  int64_t dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab, n_ctx;
  float rope_base, rms_eps;
  // gemma3n
  int64_t head_dim = 0;        // key_length = value_length
  int64_t per_layer_dim = 0;   // hidden_size_per_layer_input: per-layer embeddings' width
  int64_t laurel_rank = 0;     // LAuReL's low rank
  int64_t altup_inputs = 0;    // AltUp's streams
  int64_t kv_shared = 0;       // num_kv_shared_layers: the last layers reuse earlier layers' KV
  int64_t sliding_window = 0;  // local layers' window
  int64_t global_every = 0;    // layer i is global when (i + 1) % global_every == 0, local otherwise
  int64_t sparse_layers = 0;   // the first layers' FFN keeps the top 5% of activations (sparsity 0.95)
  float rope_base_swa = 0;     // local layers' RoPE base
  // lfm2
  const char* layer_kinds = nullptr;  // per layer 'c' (short convolution) or 'a' (attention)
  int64_t conv_width = 0;             // conv_L_cache; qwen35: the DeltaNet conv1d's width
  // qwen35 (Gated DeltaNet layers; every global_every-th layer attention, head_dim and n_rot above)
  int64_t delta_k_heads = 0, delta_v_heads = 0, delta_dim = 0, n_rot = 0;
  // gemma4 (local layers: head_dim, n_kv_heads; per_layer_dim, kv_shared, sliding_window,
  // global_every and rope_base_swa as gemma3n)
  int64_t global_head_dim = 0, global_kv_heads = 0;
  bool double_wide_mlp = false;  // the KV-sharing layers' FFN is twice ffn_dim
  // gpt-oss (head_dim, n_heads, n_kv_heads; ffn_dim is each expert's; sliding_window as gemma3n)
  int64_t n_expert = 0, n_expert_used = 0;
  float yarn_factor = 0.0f;
  int64_t yarn_orig_ctx = 0;
};

// ggml type ids and GGUF metadata type ids.
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30, kGgmlMxfp4 = 39 };
enum : uint32_t { kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kString = 8, kArray = 9 };

class Bytes {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) {
    u64(s.size());
    raw(s.data(), s.size());
  }
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    data.insert(data.end(), b, b + n);
  }
  std::vector<uint8_t> data;
};

// GGUF key/value records, counted as they are written.
class Meta {
 public:
  void u32(const std::string& k, uint32_t v) { key(k, kU32), b.u32(v); }
  void f32(const std::string& k, float v) { key(k, kF32), b.f32(v); }
  void str(const std::string& k, const std::string& v) { key(k, kString), b.str(v); }
  void i32s(const std::string& k, const std::vector<int32_t>& v) {
    array(k, kI32, v.size());
    for (int32_t x : v) b.u32(static_cast<uint32_t>(x));
  }
  void f32s(const std::string& k, const std::vector<float>& v) {
    array(k, kF32, v.size());
    for (float x : v) b.f32(x);
  }
  void bools(const std::string& k, const std::vector<bool>& v) {
    array(k, kBool, v.size());
    for (bool x : v) b.raw(x ? "\1" : "\0", 1);
  }
  void records(const std::vector<uint8_t>& r, uint64_t count) {
    b.raw(r.data(), r.size());
    n += count;
  }
  void array(const std::string& k, uint32_t type, size_t count) { key(k, kArray), b.u32(type), b.u64(count); }
  Bytes b;
  uint64_t n = 0;

 private:
  void key(const std::string& k, uint32_t type) { b.str(k), b.u32(type), ++n; }
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  bool matrix;                 // written in the chosen type; otherwise F32
  float stddev;                // of its normal values; 0 (norms, scales): 1 + 0.1 x normal
  float sign = 1.0f;           // -1: the values negated (Qwen 3.5's A = -exp(A_log) < 0)
  std::vector<float> values;   // when set, these values (F32) instead of random ones
  bool mxfp4 = false;          // random MXFP4 blocks (gpt-oss's experts), whatever the file's type
};

// Each architecture's tensors (llama.cpp's names and shapes, outermost first) and metadata keys.
std::vector<Tensor> llama_tensors(const Shape& s, int64_t vocab_size);
void llama_keys(const Shape& s, int64_t vocab_size, Meta& m);
std::vector<Tensor> lfm2_tensors(const Shape& s, int64_t vocab_size);
std::vector<Tensor> gemma3n_tensors(const Shape& s, int64_t vocab_size);
void gemma3n_keys(const Shape& s, Meta& m);
std::vector<Tensor> qwen35_tensors(const Shape& s, int64_t vocab_size);
void qwen35_keys(const Shape& s, int64_t vocab_size, Meta& m);
std::vector<Tensor> gemma4_tensors(const Shape& s, int64_t vocab_size);
std::vector<Tensor> gptoss_tensors(const Shape& s, int64_t vocab_size);
void gptoss_keys(const Shape& s, int64_t vocab_size, Meta& m);
void gemma4_keys(const Shape& s, int64_t vocab_size, Meta& m);

}  // namespace glass::cli::synth
