#include "json_vocab_model.h"

#include <fmt/format.h>

#include <random>
#include <set>

#include "support/gguf_writer.h"
#include "support/tiny_llama.h"

namespace glass::test {

std::filesystem::path write_json_vocab_model(uint64_t seed) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    types.push_back(6);
  }
  // SentencePiece pieces: U+2581 is the space.
  const char* pieces[] = {"{",
                          "}",
                          "[",
                          "]",
                          "\"",
                          "\":",
                          "\",",
                          "\"}",
                          "\"]",
                          ",\"",
                          "{\"",
                          "\"},",
                          "\"}]",
                          "\"}}",
                          ":",
                          ",",
                          "\xe2\x96\x81",
                          "true",
                          "false",
                          "null",
                          "0",
                          "1",
                          "2",
                          "3",
                          "4",
                          "5",
                          "6",
                          "7",
                          "8",
                          "9",
                          "10",
                          "12",
                          "20",
                          "-",
                          ".",
                          "e",
                          "name",
                          "id",
                          "type",
                          "value",
                          "status",
                          "a",
                          "b",
                          "c",
                          "x",
                          "y",
                          "z",
                          "A",
                          "B",
                          "T",
                          "Z",
                          "@",
                          "com",
                          "\xe2\x96\x81"
                          "the",
                          "ing",
                          "er"};
  for (const char* p : pieces) {
    tokens.push_back(p);
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i) * 0.01f;
  const int dim = 32, ffn = 64, n_vocab = static_cast<int>(tokens.size()), heads = 2, kv_heads = 1;
  GgufWriter w;
  w.kv("general.architecture", GgufWriter::string("llama"));
  w.kv("llama.block_count", GgufWriter::u32(1));
  w.kv("llama.context_length", GgufWriter::u32(4096));
  w.kv("llama.embedding_length", GgufWriter::u32(dim));
  w.kv("llama.feed_forward_length", GgufWriter::u32(ffn));
  w.kv("llama.attention.head_count", GgufWriter::u32(heads));
  w.kv("llama.attention.head_count_kv", GgufWriter::u32(kv_heads));
  w.kv("llama.attention.layer_norm_rms_epsilon", GgufWriter::f32(1e-5f));
  w.kv("tokenizer.ggml.model", GgufWriter::string("llama"));
  w.kv("tokenizer.ggml.tokens", GgufWriter::string_array(tokens));
  w.kv("tokenizer.ggml.scores", GgufWriter::f32_array(scores));
  w.kv("tokenizer.ggml.token_type", GgufWriter::i32_array(types));
  w.kv("tokenizer.ggml.bos_token_id", GgufWriter::u32(1));
  w.kv("tokenizer.ggml.eos_token_id", GgufWriter::u32(2));
  w.kv("tokenizer.ggml.unknown_token_id", GgufWriter::u32(0));
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> normal(0.0f, 0.3f);
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, bool ones = false) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = ones ? 1.0f : normal(rng);
    w.tensor_f32(name, shape, v);
  };
  const int head_dim = dim / heads, kv_dim = kv_heads * head_dim;
  tensor("token_embd.weight", {n_vocab, dim});
  tensor("output.weight", {n_vocab, dim});
  tensor("output_norm.weight", {dim}, true);
  add_llama_layer0(tensor, dim, kv_dim, ffn);
  return write_temp_file(w.build().bytes, fmt::format("json-vocab-{}.gguf", seed));
}

}  // namespace glass::test
