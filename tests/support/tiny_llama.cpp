#include "support/tiny_llama.h"

#include <random>

#include "support/gguf_writer.h"

namespace glass::test {

std::filesystem::path write_tiny_llama(const TinyLlamaSpec& spec, const std::string& file_name) {
  const int dim = 8, ffn = 16, vocab = 8, head_dim = dim / spec.n_heads;
  GgufWriter w;
  auto kv = [&](const std::string& key, GgufWriter::Value v) {
    if (!spec.drop_keys.count(key)) w.kv(key, std::move(v));
  };
  kv("general.architecture", GgufWriter::string(spec.architecture));
  kv("llama.block_count", GgufWriter::u32(1));
  kv("llama.context_length", GgufWriter::u32(spec.context_length));
  kv("llama.embedding_length", GgufWriter::u32(dim));
  kv("llama.feed_forward_length", GgufWriter::u32(ffn));
  kv("llama.attention.head_count", GgufWriter::u32(static_cast<uint32_t>(spec.n_heads)));
  kv("llama.attention.head_count_kv", GgufWriter::u32(static_cast<uint32_t>(spec.n_kv_heads)));
  kv("llama.attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-5f));
  kv("tokenizer.ggml.model", GgufWriter::string("llama"));
  kv("tokenizer.ggml.tokens", GgufWriter::string_array({"<unk>", "<s>", "</s>", "\xe2\x96\x81", "a", "b",
                                                        "\xe2\x96\x81"
                                                        "a",
                                                        "ab"}));
  kv("tokenizer.ggml.scores", GgufWriter::f32_array({0, 0, 0, -1, -2, -3, -0.5f, -0.7f}));
  kv("tokenizer.ggml.token_type", GgufWriter::i32_array({2, 3, 3, 1, 1, 1, 1, 1}));
  kv("tokenizer.ggml.bos_token_id", GgufWriter::u32(1));
  kv("tokenizer.ggml.eos_token_id", GgufWriter::u32(2));
  kv("tokenizer.ggml.unknown_token_id", GgufWriter::u32(0));

  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, bool ones = false) {
    if (spec.drop_tensors.count(name)) return;
    if (name == spec.bad_shape_tensor) shape[0] += 1;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = ones ? 1.0f + normal(rng) : normal(rng);
    w.tensor_f32(name, shape, v);
  };
  const int kv_dim = spec.n_kv_heads * head_dim;
  tensor("token_embd.weight", {vocab, dim});
  tensor("output_norm.weight", {dim}, true);
  add_llama_layer0(tensor, dim, kv_dim, ffn);
  return write_temp_file(w.build().bytes, file_name);
}

}  // namespace glass::test
