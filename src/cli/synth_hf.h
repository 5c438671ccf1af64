#pragma once
// glass synth --format hf: the synthetic llama as a Hugging Face model directory (config.json,
// generation_config.json, tokenizer.json, tokenizer_config.json, model.safetensors with HF tensor
// names and q/k rows in HF's rotate-half order), the same model as the GGUF output of that seed.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "glass/result.h"

namespace glass::cli {

struct SynthHfModel {
  int64_t dim, n_layers, n_heads, n_kv_heads, ffn_dim, vocab, n_ctx;
  float rope_base, rms_eps;
  std::string dtype;                // safetensors dtype of the matrices: F32, F16, BF16
  std::vector<std::string> tokens;  // the vocabulary, by id (<unk> <s> </s> first)
};

struct SynthTensorInfo {
  std::string gguf_name;
  std::vector<int64_t> shape;
  bool matrix;  // stored as dtype (else F32)
  uint64_t nbytes;
};

// Writes the JSON files of the directory.
Status write_hf_json_files(const std::filesystem::path& dir, const SynthHfModel& m);
// u64 length | JSON header for the tensors in order (HF names), padded to 8 bytes.
std::vector<uint8_t> safetensors_header(const SynthHfModel& m, const std::vector<SynthTensorInfo>& tensors);
// GGUF (interleaved) row order -> HF (rotate-half) for blk.N.attn_q / attn_k data; others unchanged.
void to_hf_rows(const SynthHfModel& m, const SynthTensorInfo& t, std::vector<uint8_t>& data);

}  // namespace glass::cli
