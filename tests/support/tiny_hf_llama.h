#pragma once
// A tiny random-weight Llama as an HF model directory (config.json, model.safetensors with q/k rows
// in HF's rotate-half order, tokenizer.json) and, with the same weights, as a GGUF file whose q/k
// rows are permuted the way llama.cpp's converter does. Both must give the same logits; tests
// damage the directory in one place to check each loading rule.
#include <filesystem>
#include <set>
#include <string>

namespace glass::test {

struct TinyHfSpec {
  std::set<std::string> drop_tensors;  // HF names to leave out
  bool tied = false;                   // tie_word_embeddings, no lm_head.weight
  int n_layers = 2;
  int vocab_rows = 8;        // embedding / lm_head rows (config vocab_size); the tokenizer has 8 tokens
  std::string extra_config;  // JSON members added to config.json: R"("auto_map": {...})"
  bool f16 = false;          // the checkpoint's matrices in F16 (norms stay F32; the GGUF stays F32)
};

struct TinyHf {
  std::filesystem::path dir;   // the HF directory
  std::filesystem::path gguf;  // the same model as GGUF
};

// dim 16, 4 heads (2 kv), head_dim 4, ffn 24, vocab 8, context 64.
TinyHf write_tiny_hf_llama(const TinyHfSpec& spec, const std::string& name);

}  // namespace glass::test
