#pragma once
// An HF tokenizer (tokenizer.json + tokenizer_config.json, chat_template.jinja) as the GGUF
// tokenizer.ggml.* keys llama.cpp's convert_hf_to_gguf.py writes, so that the written vocabulary
// tokenizes as the HF tokenizer does (glass reads it back with gguf_vocab.h, llama.cpp with its own
// loader):
//  * SentencePiece-style BPE (byte_fallback, the U+2581 Prepend/Replace normalizer): model "llama",
//    pre "default", tokens, scores, token_type. HF BPE ranks merges; GGUF "llama" merges by score,
//    so a token made by merge rank r scores -r (earlier merges first), every other token -1e9.
//  * byte-level BPE (ByteLevel pre-tokenizer): model "gpt2", pre named from the pre-tokenizer's
//    split pattern (llama-bpe, qwen2, tekken, gpt-2), tokens, token_type, merges ("a b", a space
//    inside a piece written as U+0120 as the script does).
// Both: bos/eos/unknown/padding ids where the tokenizer names them, add_bos_token / add_eos_token
// as the HF tokenizer adds them (written explicitly: the GGUF must add what HF adds), the chat
// template. Ids the tokenizer leaves undefined below the model's vocabulary size become
// "[PAD<id>]" Unused tokens. Anything else (Unigram, WordPiece, another pre-tokenizer or
// normalizer) is an Unsupported error naming the tokenizer.json section.
#include <cstdint>
#include <filesystem>
#include <string>

#include "formats/gguf_metadata.h"
#include "glass/result.h"

namespace glass::formats {

struct HfTokenizerFiles {
  std::string tokenizer_json;       // required
  std::string config_json;          // tokenizer_config.json; empty when absent
  std::string chat_template_jinja;  // chat_template.jinja; empty when absent (wins over the config's)
  std::string where;                // names the source in messages ("dir/tokenizer.json")
};

// Reads the files of an HF model directory. A missing tokenizer.json is an InvalidFile error naming it.
Result<HfTokenizerFiles> read_hf_tokenizer_files(const std::filesystem::path& dir);

// Adds the tokenizer.ggml.* keys (and tokenizer.chat_template*) to `m`. `n_vocab` is the model's
// vocabulary size (embedding rows): the token list is padded to it; a tokenizer with more tokens
// is an InvalidFile error. 0: the tokenizer's own size.
Status hf_tokenizer_to_gguf(const HfTokenizerFiles& files, int64_t n_vocab, GgufMetadataBuilder& m);

}  // namespace glass::formats
