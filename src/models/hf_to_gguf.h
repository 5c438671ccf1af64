#pragma once
// Writing an HF model directory (config.json, safetensors, tokenizer.json) as a GGUF file that
// glass and llama.cpp load: what llama.cpp's convert_hf_to_gguf.py writes, then quantized as
// `glass quantize` quantizes a GGUF (quantize_file.h: the same file types and mix rules).
//  * metadata: the family's HF adapter's keys (models/hf.h: config.json -> <arch>.* keys),
//    general.name (the directory's name), and the tokenizer (formats/hf_gguf_vocab.h);
//  * tensors: the adapter's name table, each HF tensor under its GGUF name, rope_freqs.weight
//    where the config implies one; q/k rows permuted from HF's rotate-half order into GGUF's
//    interleaved pairs where the adapter says so (the first rope.dimension_count rows of each
//    head; the rest stay); 1-D tensors stored F32; tensors in llama.cpp's loader order (so
//    llama-quantize on an F32/F16/BF16 conversion writes the bytes a direct conversion writes).
// Tensors stream from the safetensors mappings a bounded chunk of rows at a time.
#include <filesystem>

#include "formats/quantize_file.h"
#include "glass/result.h"

namespace glass::models {

// Errors: those of open_hf_model (unsupported model_type, auto_map, missing or mismatched
// tensors, ...), of the tokenizer conversion (missing tokenizer.json, a tokenizer llama.cpp has no
// name for) and of quantize_tensors. On error no output file is left behind.
Result<formats::QuantizeReport> hf_to_gguf(const std::filesystem::path& dir, const std::filesystem::path& out,
                                           const formats::QuantizeOptions& options);

// Output row r of a q or k projection with `n_heads` heads of `head_dim` rows, `n_rot` of them
// rotated: the HF row it comes from. Exposed for tests.
std::vector<int64_t> rope_rows_hf_to_gguf(int64_t n_heads, int64_t head_dim, int64_t n_rot);

}  // namespace glass::models
