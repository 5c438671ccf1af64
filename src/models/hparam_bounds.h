#pragma once
// Hyper-parameters against the file that claims them, before an architecture reads them: a 4 KB
// file saying block_count = 4e9 or head_count = 2^31 must fail here, not spend an hour building
// layers whose weights are missing or allocate per-head tables of gigabytes. Family-independent,
// so every from_gguf gets it (the registry runs it first):
//  * {arch}.block_count: the file holds at least one tensor per layer and a "blk.<n-1>." tensor;
//  * every size key ({arch}.embedding_length, feed_forward_length, head counts, key/value length,
//    vocab_size, expert counts, per-layer arrays of them) and the products head_count x key_length:
//    at most the element count of the largest tensor, since each sizes some weight of the file.
#include <string_view>

#include "formats/gguf.h"
#include "formats/hf_config.h"
#include "glass/result.h"
#include "models/weights.h"

namespace glass::models {

// InvalidFile naming the key, its value and what the file holds.
Status check_hparams_fit_file(const formats::GgufFile& file, const WeightIndex& weights,
                              std::string_view arch);

// The same for an HF checkpoint, before its adapter computes anything from config.json (Llama 3
// RoPE factors are head_dim / 2 floats): num_hidden_layers at most the checkpoint's tensor count,
// each size key (hidden_size, intermediate_size, head counts, head_dim, vocab_size, expert sizes)
// at most the largest tensor's element count. Keys of another type are the adapter's to refuse.
Status check_hf_config_fits(const formats::HfConfig& config, uint64_t max_tensor_elements,
                            uint64_t n_tensors);
// The same for one object of it (config.json itself or its text_config, both checked by the above).
Status check_hf_config_fits(const formats::HfObject& config, uint64_t max_tensor_elements,
                            uint64_t n_tensors);

}  // namespace glass::models
