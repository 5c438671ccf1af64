#pragma once
// Hugging Face tokenizers without model weights: tokenizer.json (normalizer, pre_tokenizer, model
// BPE / WordPiece, post_processor, decoder, added_tokens) plus tokenizer_config.json when present
// (bos_token / eos_token, add_bos_token / add_eos_token, clean_up_tokenization_spaces). The result
// encodes and decodes as HF tokenizers 0.23 does (pipeline.h, flavour HuggingFace).
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "tokenizer/tokenizer.h"

namespace glass::tokenizer {

struct HfTokenizerOptions {
  // More end-of-generation ids, joining those the tokenizer files imply: a model directory's
  // generation_config.json eos_token_id list (Llama 3 stops at <|eot_id|> as well as
  // <|end_of_text|>). Ids outside the vocabulary are an InvalidArgument error.
  std::vector<int32_t> eog_ids;
};

// `path`: a tokenizer.json file, or a directory holding one (its tokenizer_config.json is read when
// present). Io errors name the file; malformed content is InvalidFile naming the JSON path
// ("tokenizer.json: model.merges[3]: ..."); a component glass does not implement (Unigram,
// Precompiled normalizer, ...) is Unsupported, naming it.
Result<Tokenizer> load_hf_tokenizer(const std::filesystem::path& path, const HfTokenizerOptions& options = {});

// The same from the files' contents; `config_json` may be empty (no tokenizer_config.json).
// tokenizer_config.json's add_bos_token / add_eos_token, when given, replace the BOS / EOS part of
// the post-processor's template, as transformers' Llama and Gemma tokenizer classes do.
Result<Tokenizer> hf_tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                         const HfTokenizerOptions& options = {});

}  // namespace glass::tokenizer
