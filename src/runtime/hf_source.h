#pragma once
// The HF side of load_llm: a model directory (config.json, safetensors, tokenizer.json) read into a
// Model::Impl the way a GGUF file is: metadata as GGUF keys, weights by canonical name, tokenizer.
#include <cstdint>
#include <filesystem>

#include "glass/result.h"
#include "models/architecture.h"
#include "runtime/model_impl.h"

namespace glass {

// What a model path is. A directory holding config.json (and safetensors, or no GGUF file) is a
// Hugging Face checkpoint; any other directory is a GGUF snapshot (formats::find_gguf_model picks
// its file). A lone config.json or *.safetensors file is refused with a pointer to its directory.
enum class ModelFormat : uint8_t { Gguf, HfDirectory };
Result<ModelFormat> detect_model_format(const std::filesystem::path& path);
// Whether a directory's files are read as Hugging Face ones (config.json, tokenizer.json, ...) rather
// than as a GGUF snapshot: it holds no *.gguf file, or config.json with safetensors.
bool is_hf_directory(const std::filesystem::path& dir);

// Fills impl.file (config.json as GGUF metadata), impl.weights, impl.tokenizer and impl.storage,
// sets build.hf_layout and returns the architecture and the weight files' total size.
struct HfSource {
  const models::Architecture* arch = nullptr;
  uint64_t file_bytes = 0;
};
Result<HfSource> open_hf_source(const std::filesystem::path& dir, Model::Impl& impl,
                                models::BuildOptions& build);

// An architecture's error about its (GGUF-named) keys, e.g. "llama: llama.attention.head_count = 8
// is not a multiple of ...", said in terms of the directory's config.json.
Error hf_build_error(const Error& e, const std::filesystem::path& dir);

}  // namespace glass
