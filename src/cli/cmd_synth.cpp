// glass synth: a deterministic random-weight GGUF of a named real shape (SmolLM2-135M,
// Llama-3.2-1B, Qwen2.5-0.5B-like as llama; SmolLM3-3B; LFM2-1.2B / 350M; Gemma 3n E4B / E2B's
// text model as gemma3n), so
// benchmarks run anywhere without downloads. The file is a GGUF v3 under llama.cpp's names and keys
// (F32 / F16 / BF16 matrices, F32 norms and small tensors, a synthetic SentencePiece vocabulary of the
// shape's size, or with --vocab a real one and its size) that llama.cpp loads and llama-quantize
// converts.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.h"
#include "cli/progress.h"
#include "cli/synth_hf.h"
#include "glass/files.h"
#include "glass/half.h"
#include "glass/tools.h"

namespace glass::cli {
namespace {

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
};

// Qwen3.5-2B's published size (24 layers of width 2048, a 248,320-token vocabulary: llama.cpp's 2B)
// with the family's layout (3 Gated DeltaNet layers to 1 attention, head_dim 256 with a quarter of
// it rotated, 128-wide DeltaNet heads); the head counts and the FFN width are assumptions where the
// published configuration was not at hand, so measure it side by side, not against other numbers.
constexpr Shape qwen35_2b() {
  Shape s{"qwen3.5-2b", "qwen35", 2048, 24, 8, 2, 6144, 248320, 262144, 10000000.0f, 1e-6f};
  s.head_dim = 256, s.global_every = 4, s.conv_width = 4;
  s.delta_k_heads = 16, s.delta_v_heads = 16, s.delta_dim = 128, s.n_rot = 64;
  return s;
}

// LiquidAI/LFM2-1.2B's config: 16 layers, 6 of them attention (layer_types).
constexpr Shape lfm2_sized(const char* name, int64_t dim, int64_t n_heads, int64_t n_kv_heads,
                           int64_t ffn_dim, const char* kinds) {
  Shape s{name, "lfm2", dim, 0, n_heads, n_kv_heads, ffn_dim, 65536, 128000, 1000000.0f, 1e-5f};
  s.layer_kinds = kinds, s.conv_width = 3;
  for (const char* k = kinds; *k != 0; ++k) ++s.n_layers;
  return s;
}

// google/gemma-3n-E4B's text_config: 262,144 embedding rows (vocab_size_per_layer_input; the 256
// audio/vision tokens past it are not the text model's), layer_types (4 sliding, 1 full) x 7.
constexpr Shape gemma3n_e4b() {
  Shape s{"gemma3n-e4b", "gemma3n", 2048, 35, 8, 2, 16384, 262144, 32768, 1000000.0f, 1e-6f};
  s.head_dim = 256, s.per_layer_dim = 256, s.laurel_rank = 64, s.altup_inputs = 4, s.kv_shared = 15;
  s.sliding_window = 512, s.global_every = 5, s.sparse_layers = 10, s.rope_base_swa = 10000.0f;
  return s;
}

// Another size of the same structure.
constexpr Shape gemma3n_sized(const char* name, int64_t dim, int64_t n_layers, int64_t n_heads,
                              int64_t n_kv_heads, int64_t head_dim, int64_t ffn_dim, int64_t vocab,
                              int64_t n_ctx, int64_t kv_shared, int64_t sliding_window) {
  Shape s = gemma3n_e4b();
  s.name = name;
  s.dim = dim, s.n_layers = n_layers, s.n_heads = n_heads, s.n_kv_heads = n_kv_heads, s.head_dim = head_dim;
  s.ffn_dim = ffn_dim, s.vocab = vocab, s.n_ctx = n_ctx, s.kv_shared = kv_shared,
  s.sliding_window = sliding_window;
  return s;
}

constexpr Shape kShapes[] = {
    {"smollm2-135m", "llama", 576, 30, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f},
    {"llama-1b", "llama", 2048, 16, 32, 8, 8192, 128256, 131072, 500000.0f, 1e-5f},
    {"qwen2.5-0.5b", "llama", 896, 24, 14, 2, 4864, 151936, 32768, 1000000.0f, 1e-6f},
    {"tiny", "llama", 64, 2, 4, 2, 128, 512, 256, 10000.0f, 1e-5f},
    // HuggingFaceTB/SmolLM3-3B: Llama's tensors, no RoPE in every fourth layer, tied embeddings.
    {"smollm3-3b", "smollm3", 2048, 36, 16, 4, 11008, 128256, 65536, 5000000.0f, 1e-6f},
    lfm2_sized("lfm2-1.2b", 2048, 32, 8, 8192,
               "ccacca"
               "ccacac"
               "acac"),
    // LiquidAI/LFM2-350M: the same layer pattern, narrower.
    lfm2_sized("lfm2-350m", 1024, 16, 8, 4608,
               "ccacca"
               "ccacac"
               "acac"),
    qwen35_2b(),
    gemma3n_e4b(),
    // google/gemma-3n-E2B: 30 layers, a narrower FFN, the last 10 sharing KV.
    gemma3n_sized("gemma3n-e2b", 2048, 30, 8, 2, 256, 8192, 262144, 32768, 10, 512),
    // The same structure at test size: every kind of tensor and key, local and global layers, shared
    // KV, sparse and dense FFNs. llama.cpp fixes three of Gemma 3n's sizes rather than reading them
    // (the per-layer width 256, LAuReL's rank 64, KV computed by the first 20 layers): with those and
    // 21 layers, the last sharing, llama.cpp loads this shape and reads it as glass does.
    gemma3n_sized("gemma3n-tiny", 64, 21, 2, 1, 32, 128, 512, 256, 1, 12),
};

// ggml type ids and GGUF metadata type ids.
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlBF16 = 30 };
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
};

// splitmix64 -> approximately normal values (sum of four uniforms, rescaled): fast and portable.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  float normal() {
    float u = 0;
    for (int i = 0; i < 4; ++i) u += static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
    return (u - 2.0f) * 1.7320508f;  // variance of the sum is 4/12
  }

 private:
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t s_;
};

// The synthetic vocabulary: <unk> <s> </s>, the 256 byte tokens, then "▁w<i>" pieces.
std::string token_text(uint64_t i) {
  return i == 0    ? "<unk>"
         : i == 1  ? "<s>"
         : i == 2  ? "</s>"
         : i < 259 ? fmt::format("<0x{:02X}>", i - 3)
                   : fmt::format("\xE2\x96\x81w{}", i);
}

std::vector<Tensor> llama_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t head_dim = s.dim / s.n_heads, kv_dim = s.n_kv_heads * head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"output_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("attn_q"), {s.dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_output"), {s.dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

// The keys of the llama graph, under the shape's architecture ("llama", "smollm3", "lfm2").
void llama_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const std::string a = s.arch;
  m.u32(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  m.u32(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  m.u32(a + ".embedding_length", static_cast<uint32_t>(s.dim));
  m.u32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn_dim));
  m.u32(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  if (s.layer_kinds == nullptr) {
    m.u32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
    m.u32(a + ".rope.dimension_count", static_cast<uint32_t>(s.dim / s.n_heads));
  } else {  // lfm2: kv heads per layer, 0 for the convolutions
    std::vector<int32_t> kv;
    for (const char* k = s.layer_kinds; *k != 0; ++k)
      kv.push_back(*k == 'a' ? static_cast<int32_t>(s.n_kv_heads) : 0);
    m.i32s(a + ".attention.head_count_kv", kv);
    m.u32(a + ".shortconv.l_cache", static_cast<uint32_t>(s.conv_width));
  }
  m.u32(a + ".vocab_size", static_cast<uint32_t>(vocab_size));
  m.f32(a + ".rope.freq_base", s.rope_base);
  m.f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
}

// LFM2's tensors (llama.cpp's lfm2 names): per layer a short convolution (in_proj to B | C | x, the
// [dim, L] taps, out_proj) or attention with q/k norms, then the SwiGLU MLP; the final norm is
// token_embd_norm, the output tied.
std::vector<Tensor> lfm2_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t head_dim = s.dim / s.n_heads, kv_dim = s.n_kv_heads * head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"token_embd_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    if (s.layer_kinds[i] == 'a') {
      t.push_back({blk("attn_q"), {s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_output"), {s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_q_norm"), {head_dim}, false, 0.0f});
      t.push_back({blk("attn_k_norm"), {head_dim}, false, 0.0f});
    } else {
      t.push_back({blk("shortconv.in_proj"), {3 * s.dim, s.dim}, true, 0.02f});
      t.push_back({blk("shortconv.conv"), {s.dim, s.conv_width}, false, 0.3f});
      t.push_back({blk("shortconv.out_proj"), {s.dim, s.dim}, true, 0.02f});
    }
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

// Gemma 3n's tensors under llama.cpp's names (src/llama-arch.cpp LLM_ARCH_GEMMA3N), shapes outermost
// first: the per-layer embeddings (one 256-wide row per layer per token) and their projection from the
// residual, AltUp's projections into and out of its extra streams, and per layer attention with q/k
// norms, a GELU FFN, the per-layer input gate and projection, AltUp's router and coefficients and
// LAuReL's low-rank pair.
std::vector<Tensor> gemma3n_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  const int64_t ple = s.n_layers * s.per_layer_dim, n = s.altup_inputs;
  std::vector<Tensor> t{
      {"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
      {"per_layer_token_embd.weight", {vocab_size, ple}, true, 0.02f},
      {"per_layer_model_proj.weight", {ple, s.dim}, true, 0.02f},
      {"per_layer_proj_norm.weight", {s.per_layer_dim}, false, 0.0f},
      {"altup_proj.weight", {n - 1, s.dim, s.dim}, true, 0.02f},
      {"altup_unembd_proj.weight", {n - 1, s.dim, s.dim}, true, 0.02f},
  };
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w) { return fmt::format("blk.{}.{}.weight", i, w); };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("attn_q"), {q_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
    t.push_back({blk("attn_output"), {s.dim, q_dim}, true, 0.02f});
    t.push_back({blk("attn_q_norm"), {s.head_dim}, false, 0.0f});
    t.push_back({blk("attn_k_norm"), {s.head_dim}, false, 0.0f});
    t.push_back({blk("post_attention_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
    t.push_back({blk("post_ffw_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("inp_gate"), {s.per_layer_dim, s.dim}, true, 0.02f});
    t.push_back({blk("proj"), {s.dim, s.per_layer_dim}, true, 0.02f});
    t.push_back({blk("post_norm"), {s.dim}, false, 0.0f});
    // Small F32 tensors in llama.cpp's conversions: coefficients, router, scales.
    t.push_back({blk("altup_correct_coef"), {n, n}, false, 0.02f});
    t.push_back({blk("altup_correct_scale"), {s.dim}, false, 0.0f});
    t.push_back({blk("altup_predict_coef"), {n * n, n}, false, 0.02f});
    t.push_back({blk("altup_router"), {n, s.dim}, false, 0.02f});
    t.push_back({blk("altup_router_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("laurel_l"), {s.laurel_rank, s.dim}, true, 0.02f});
    t.push_back({blk("laurel_r"), {s.dim, s.laurel_rank}, true, 0.02f});
    t.push_back({blk("laurel_post_norm"), {s.dim}, false, 0.0f});
  }
  t.push_back({"output_norm.weight", {s.dim}, false, 0.0f});
  return t;
}

// Qwen 3.5's tensors (llama.cpp's qwen35 names): Gated DeltaNet layers (qkv, z gate, conv1d taps,
// dt bias, A (negative), beta and alpha projections, per-head norm, out) and gated attention layers
// (q with its gate, k, v, out, q/k norms), each with the post-attention norm and a SwiGLU MLP; tied.
std::vector<Tensor> qwen35_tensors(const Shape& s, int64_t vocab_size) {
  const int64_t key_dim = s.delta_k_heads * s.delta_dim, value_dim = s.delta_v_heads * s.delta_dim;
  const int64_t conv_dim = 2 * key_dim + value_dim, q_dim = s.n_heads * s.head_dim;
  const int64_t kv_dim = s.n_kv_heads * s.head_dim;
  std::vector<Tensor> t{{"token_embd.weight", {vocab_size, s.dim}, true, 0.02f},
                        {"output_norm.weight", {s.dim}, false, 0.0f}};
  for (int64_t i = 0; i < s.n_layers; ++i) {
    auto blk = [&](const char* w, const char* part = ".weight") {
      return fmt::format("blk.{}.{}{}", i, w, part);
    };
    t.push_back({blk("attn_norm"), {s.dim}, false, 0.0f});
    t.push_back({blk("post_attention_norm"), {s.dim}, false, 0.0f});
    if ((i + 1) % s.global_every == 0) {
      t.push_back({blk("attn_q"), {2 * q_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_k"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_v"), {kv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_output"), {s.dim, q_dim}, true, 0.02f});
      t.push_back({blk("attn_q_norm"), {s.head_dim}, false, 0.0f});
      t.push_back({blk("attn_k_norm"), {s.head_dim}, false, 0.0f});
    } else {
      t.push_back({blk("attn_qkv"), {conv_dim, s.dim}, true, 0.02f});
      t.push_back({blk("attn_gate"), {value_dim, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_conv1d"), {conv_dim, s.conv_width}, false, 0.3f});
      t.push_back({blk("ssm_dt", ".bias"), {s.delta_v_heads}, false, 0.3f});
      t.push_back({blk("ssm_a", ""), {s.delta_v_heads}, false, 0.0f, -1.0f});
      t.push_back({blk("ssm_beta"), {s.delta_v_heads, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_alpha"), {s.delta_v_heads, s.dim}, true, 0.02f});
      t.push_back({blk("ssm_norm"), {s.delta_dim}, false, 0.0f});
      t.push_back({blk("ssm_out"), {s.dim, value_dim}, true, 0.02f});
    }
    t.push_back({blk("ffn_gate"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_up"), {s.ffn_dim, s.dim}, true, 0.02f});
    t.push_back({blk("ffn_down"), {s.dim, s.ffn_dim}, true, 0.02f});
  }
  return t;
}

void qwen35_keys(const Shape& s, int64_t vocab_size, Meta& m) {
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  m.u32("qwen35.block_count", u(s.n_layers));
  m.u32("qwen35.context_length", u(s.n_ctx));
  m.u32("qwen35.embedding_length", u(s.dim));
  m.u32("qwen35.feed_forward_length", u(s.ffn_dim));
  m.u32("qwen35.attention.head_count", u(s.n_heads));
  m.u32("qwen35.attention.head_count_kv", u(s.n_kv_heads));
  m.u32("qwen35.attention.key_length", u(s.head_dim));
  m.u32("qwen35.attention.value_length", u(s.head_dim));
  m.f32("qwen35.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.f32("qwen35.rope.freq_base", s.rope_base);
  m.u32("qwen35.rope.dimension_count", u(s.n_rot));
  const auto third = static_cast<int32_t>(s.n_rot / 2 / 3);
  m.i32s("qwen35.rope.dimension_sections",
         {static_cast<int32_t>(s.n_rot / 2) - 2 * third, third, third, 0});  // [12, 10, 10, 0] at 64
  m.u32("qwen35.ssm.conv_kernel", u(s.conv_width));
  m.u32("qwen35.ssm.state_size", u(s.delta_dim));
  m.u32("qwen35.ssm.group_count", u(s.delta_k_heads));
  m.u32("qwen35.ssm.time_step_rank", u(s.delta_v_heads));
  m.u32("qwen35.ssm.inner_size", u(s.delta_v_heads * s.delta_dim));
  m.u32("qwen35.full_attention_interval", u(s.global_every));
  m.u32("qwen35.vocab_size", u(vocab_size));
}

void gemma3n_keys(const Shape& s, Meta& m) {
  const auto layers = static_cast<size_t>(s.n_layers);
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  m.u32("gemma3n.context_length", u(s.n_ctx));
  m.u32("gemma3n.embedding_length", u(s.dim));
  m.i32s("gemma3n.feed_forward_length", std::vector<int32_t>(layers, static_cast<int32_t>(s.ffn_dim)));
  m.u32("gemma3n.block_count", u(s.n_layers));
  m.u32("gemma3n.attention.head_count", u(s.n_heads));
  m.u32("gemma3n.attention.head_count_kv", u(s.n_kv_heads));
  m.f32("gemma3n.attention.layer_norm_rms_epsilon", s.rms_eps);
  m.u32("gemma3n.attention.key_length", u(s.head_dim));
  m.u32("gemma3n.attention.value_length", u(s.head_dim));
  m.f32("gemma3n.rope.freq_base", s.rope_base);
  m.f32("gemma3n.rope.freq_base_swa", s.rope_base_swa);
  m.u32("gemma3n.attention.sliding_window", u(s.sliding_window));
  m.f32("gemma3n.final_logit_softcapping", 30.0f);
  m.u32("gemma3n.altup.active_idx", 0);
  m.u32("gemma3n.altup.num_inputs", u(s.altup_inputs));
  m.u32("gemma3n.embedding_length_per_layer_input", u(s.per_layer_dim));
  m.u32("gemma3n.attention.shared_kv_layers", u(s.kv_shared));
  // activation_sparsity_pattern 0.95 for the first layers: the scale is the standard normal's 0.95
  // quantile as a float32 inverse error function gives it (1.6448533; exactly 1.6448536), 0 where
  // the FFN is dense.
  std::vector<float> sparsity(layers, 0.0f);
  std::vector<bool> sliding(layers);
  for (size_t i = 0; i < layers; ++i) {
    if (static_cast<int64_t>(i) < s.sparse_layers) sparsity[i] = 1.6448533535003662f;
    sliding[i] = (static_cast<int64_t>(i) + 1) % s.global_every != 0;
  }
  m.f32s("gemma3n.activation_sparsity_scale", sparsity);
  m.bools("gemma3n.attention.sliding_window_pattern", sliding);
}

struct SynthOptions {
  std::string shape = "smollm2-135m";
  std::string type = "f16";
  std::string out;
  uint64_t seed = 1234;
  std::string format = "gguf";
  bool no_vocab = false;
  std::string vocab;
  bool dry_run = false;
};

int synth(const SynthOptions& o) {
  const std::string& shape_name = o.shape;
  const std::string& type = o.type;
  const std::string& out = o.out;
  const std::string& format = o.format;
  const std::string& vocab_path = o.vocab;
  const bool no_vocab = o.no_vocab;
  if (out.empty() && !o.dry_run)
    return report(make_error(ErrorCode::InvalidArgument, "synth: -o/--output is required (or --dry-run)"));
  if (no_vocab && format != "gguf")
    return report(
        make_error(ErrorCode::InvalidArgument, "synth: --no-vocab writes GGUF only (--format gguf)"));
  if (!vocab_path.empty() && (no_vocab || format != "gguf"))
    return report(make_error(ErrorCode::InvalidArgument,
                             "synth: --vocab writes GGUF only (--format gguf), and not with --no-vocab"));
  const Shape* s = nullptr;
  for (const Shape& c : kShapes)
    if (shape_name == c.name) s = &c;
  std::string names;
  for (const Shape& c : kShapes) names += std::string(names.empty() ? "" : ", ") + c.name;
  if (s == nullptr)
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("synth: unknown shape '{}' ({})", shape_name, names)));
  uint32_t ggml_type = 0, file_type = 0, elem = 0;
  if (type == "f32") {
    ggml_type = kGgmlF32, file_type = 0, elem = 4;
  } else if (type == "f16") {
    ggml_type = kGgmlF16, file_type = 1, elem = 2;
  } else if (type == "bf16") {
    ggml_type = kGgmlBF16, file_type = 32, elem = 2;
  } else {
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("synth: type '{}' (f32, f16 or bf16; quantize the result with glass "
                                         "quantize or llama-quantize)",
                                         type)));
  }
  // A real vocabulary's keys (--vocab): its token count is the embedding's rows.
  GgufVocabularyKeys vocab;
  if (!vocab_path.empty()) {
    auto v = vocabulary_gguf_keys(vocab_path);
    if (!v) return report(v.error());
    vocab = std::move(*v);
  }
  const int64_t vocab_size = vocab_path.empty() ? s->vocab : vocab.n_tokens;
  if (std::string(s->arch) != "llama" && format != "gguf")
    return report(
        make_error(ErrorCode::InvalidArgument,
                   fmt::format("synth: --format hf writes llama shapes only ({} is {})", s->name, s->arch)));
  const std::string arch = s->arch;
  const std::vector<Tensor> tensors = arch == "gemma3n"  ? gemma3n_tensors(*s, vocab_size)
                                      : arch == "lfm2"   ? lfm2_tensors(*s, vocab_size)
                                      : arch == "qwen35" ? qwen35_tensors(*s, vocab_size)
                                                         : llama_tensors(*s, vocab_size);
  Meta meta;
  meta.str("general.architecture", s->arch);
  meta.str("general.name", fmt::format("glass synth {} {}", s->name, type));
  meta.u32("general.file_type", file_type);
  meta.u32("general.alignment", 32);
  if (arch == "gemma3n")
    gemma3n_keys(*s, meta);
  else if (arch == "qwen35")
    qwen35_keys(*s, vocab_size, meta);
  else
    llama_keys(*s, vocab_size, meta);
  // --no-vocab: llama.cpp's weights-only files (tokenizer.ggml.model = "no_vocab", no token list).
  const auto n_vocab = static_cast<uint64_t>(vocab_size);
  if (!vocab_path.empty()) {
    meta.records(vocab.records, vocab.count);
  } else {
    meta.str("tokenizer.ggml.model", no_vocab ? "no_vocab" : "llama");
  }
  if (!no_vocab && vocab_path.empty()) {
    meta.u32("tokenizer.ggml.bos_token_id", 1);
    meta.u32("tokenizer.ggml.eos_token_id", 2);
    meta.u32("tokenizer.ggml.unknown_token_id", 0);
    // The vocabulary: <unk> <s> </s>, the 256 byte tokens, then "▁w<i>" pieces.
    meta.array("tokenizer.ggml.tokens", kString, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.str(token_text(i));
    meta.array("tokenizer.ggml.scores", kF32, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.f32(i < 259 ? 0.0f : -static_cast<float>(i));
    meta.array("tokenizer.ggml.token_type", kI32, n_vocab);
    for (uint64_t i = 0; i < n_vocab; ++i) meta.b.u32(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
  }

  Bytes h;
  h.raw("GGUF", 4);
  h.u32(3);
  h.u64(tensors.size());
  h.u64(meta.n);
  h.raw(meta.b.data.data(), meta.b.data.size());
  meta = Meta{};
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const Tensor& t : tensors) {
    h.str(t.name);
    h.u32(static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) h.u64(static_cast<uint64_t>(*it));
    h.u32(t.matrix ? ggml_type : kGgmlF32);
    h.u64(offset);
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    sizes.push_back(n * (t.matrix ? elem : 4));
    offset += (sizes.back() + 31) / 32 * 32;
  }
  h.data.resize((h.data.size() + 31) / 32 * 32, 0);
  if (o.dry_run) {
    uint64_t params = 0;
    for (const Tensor& t : tensors) {
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
      params += n;
    }
    fmt::print("{} ({}, {}): {} tensors, {} parameters, {} bytes\n", s->name, s->arch, type, tensors.size(),
               params, h.data.size() + offset);
    return 0;
  }

  // --format hf: the same tensors and values as an HF directory (synth_hf.h), data unpadded.
  const bool hf = format == "hf";
  SynthHfModel hf_model{s->dim,     s->n_layers,
                        s->n_heads, s->n_kv_heads,
                        s->ffn_dim, s->vocab,
                        s->n_ctx,   s->rope_base,
                        s->rms_eps, type == "f32" ? "F32" : type == "f16" ? "F16" : "BF16",
                        {}};
  std::vector<SynthTensorInfo> hf_tensors;
  std::string data_path = out;
  if (hf) {
    for (uint64_t i = 0; i < n_vocab; ++i) hf_model.tokens.push_back(token_text(i));
    for (size_t k = 0; k < tensors.size(); ++k)
      hf_tensors.push_back({tensors[k].name, tensors[k].shape, tensors[k].matrix, sizes[k]});
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (auto st = write_hf_json_files(out, hf_model); !st) return report(st.error());
    h.data = safetensors_header(hf_model, hf_tensors);
    data_path = (std::filesystem::path(out) / "model.safetensors").string();
  } else if (format != "gguf") {
    return report(
        make_error(ErrorCode::InvalidArgument, fmt::format("synth: format '{}' (gguf or hf)", format)));
  }

  // A temporary file renamed over the target when complete (glass/files.h).
  auto f = OutputFile::create(data_path, "synth");
  if (!f) return report(f.error());
  Status written = f->write(h.data.data(), h.data.size());
  Rng rng(o.seed);
  std::vector<uint8_t> buf;
  Progress progress("synth", Progress::Unit::Bytes);
  uint64_t done = 0;
  // GGUF tensors go out in pieces of at most 16M values (the E4B shape's per-layer embedding alone is
  // 4.4 GiB at f16); an HF tensor whole, as its q/k rows are reordered across the tensor.
  constexpr uint64_t kPiece = uint64_t{1} << 24;
  for (size_t k = 0; k < tensors.size() && written.ok(); ++k) {
    progress.update(done, offset);
    done += sizes[k];
    const Tensor& t = tensors[k];
    const uint64_t bytes_per = t.matrix ? elem : 4;
    const uint64_t n = sizes[k] / bytes_per;
    const uint64_t piece = hf ? n : kPiece;
    for (uint64_t first = 0; first < n && written.ok(); first += piece) {
      const uint64_t count = std::min(piece, n - first);
      buf.assign(count * bytes_per, 0);
      for (uint64_t i = 0; i < count; ++i) {
        const float v = t.sign * (t.stddev > 0 ? rng.normal() * t.stddev : 1.0f + 0.1f * rng.normal());
        if (!t.matrix || ggml_type == kGgmlF32) {
          std::memcpy(buf.data() + 4 * i, &v, 4);
        } else {
          const uint16_t b = ggml_type == kGgmlF16 ? f32_to_f16(v) : f32_to_bf16(v);
          std::memcpy(buf.data() + 2 * i, &b, 2);
        }
      }
      if (hf) to_hf_rows(hf_model, hf_tensors[k], buf);
      written = f->write(buf.data(), buf.size());
    }
    if (!hf && written.ok()) {  // GGUF's 32-byte alignment of the next tensor
      const std::vector<uint8_t> pad((sizes[k] + 31) / 32 * 32 - sizes[k], 0);
      if (!pad.empty()) written = f->write(pad.data(), pad.size());
    }
  }
  if (written.ok()) written = f->commit();
  if (!written.ok()) return report(written.error());
  progress.finish();
  fmt::print(stderr, "glass: wrote {} ({}, {}, {} tensors, {} tokens, {:.1f} MiB)\n", out, s->name, type,
             tensors.size(), vocab_size, static_cast<double>(h.data.size() + offset) / (1024.0 * 1024.0));
  return 0;
}

}  // namespace

void add_synth_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("synth", "write a deterministic random-weight GGUF of a real model's shape");
  auto o = std::make_shared<SynthOptions>();
  cmd->add_option("--shape", o->shape,
                  "smollm2-135m, llama-1b, qwen2.5-0.5b, tiny (llama); smollm3-3b; lfm2-1.2b, lfm2-350m; "
                  "qwen3.5-2b; gemma3n-e4b, "
                  "gemma3n-e2b, gemma3n-tiny (gemma3n: the text model of Gemma 3n)")
      ->capture_default_str();
  cmd->add_option("--type", o->type, "matrix storage: f32, f16 or bf16")->capture_default_str();
  cmd->add_option("-o,--output", o->out, "output GGUF file (--format hf: output directory)");
  cmd->add_option("--format", o->format,
                  "gguf, or hf: a Hugging Face directory (config.json, model.safetensors, "
                  "tokenizer.json) holding the same model (llama shapes)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "random seed")->capture_default_str();
  cmd->add_flag(
      "--no-vocab", o->no_vocab,
      "write no vocabulary (tokenizer.ggml.model = \"no_vocab\"), as llama.cpp's weights-only files");
  cmd->add_option(
      "--vocab", o->vocab,
      "a real vocabulary, its size the embedding's rows: a GGUF whose tokenizer.* keys are copied "
      "(llama.cpp's ggml-vocab-*.gguf, a model) or an HF tokenizer.json or its directory");
  cmd->add_flag("--dry-run", o->dry_run,
                "print the shape's tensors, parameters and file size (stdout) and write nothing");
  cmd->callback([&exit_code, o] { exit_code = synth(*o); });
}

}  // namespace glass::cli
