#pragma once
// The vocabulary a tokenizer is built from: plain data, filled by a loader (formats/gguf_vocab.h,
// tokenizer/hf_tokenizer.h) and validated by Tokenizer::create. Ids are int32 (llama.cpp's
// llama_token); -1 means "none".
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/merge_list.h"
#include "tokenizer/token_texts.h"

namespace glass::tokenizer {

// GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type); one byte per token.
enum class TokenType : uint8_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6
};

// Whitespace a special token swallows when it is split out of raw text (llama.cpp's LSTRIP/RSTRIP
// token attributes): kStripLeft drops ASCII whitespace just before the token, kStripRight just after.
enum StripFlags : uint8_t { kStripNone = 0, kStripLeft = 1, kStripRight = 2 };

struct Vocab {
  // tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE), "bert" (WordPiece), "gemma4" (BPE
  // over U+2581 text); an HF tokenizer.json's model type ("BPE", "WordPiece").
  std::string model;
  std::string pre;  // tokenizer.ggml.pre: the pre-tokenizer family of a GGUF BPE vocabulary
  TokenTexts tokens;
  std::vector<float> scores;     // one per token (SPM merge priority: higher merges first)
  std::vector<TokenType> types;  // one per token
  std::vector<uint8_t> strip;    // empty (no token strips) or one StripFlags value per token
  // BPE merges by rank (first = merged first): GGUF tokenizer.ggml.merges, HF model.merges.
  MergeList merges;
  int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1, sep_id = -1;
  std::vector<int32_t> eog_ids;  // end-of-generation set (eos + e.g. eot/eom when present)
  bool add_bos = true, add_eos = false, add_space_prefix = true;
  bool add_sep = false;  // llama.cpp: append the separator token (BERT-style encoders)
  // GGUF tokenizer.ggml.normalizer.lowercase / .strip_accents (llama.cpp's WordPiece preprocessing).
  bool normalizer_lowercase = true, normalizer_strip_accents = true;
};

// Ids of special tokens a loader read from its metadata (-1: not given). They feed
// apply_special_token_rules; only eog_ids and the token types end up in Vocab.
struct SpecialTokenIds {
  int32_t eot = -1, eom = -1;
  int32_t fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
};

// llama.cpp's special-token rules (llama_vocab::impl::load), shared by every loader so that glass
// stops and renders where llama.cpp does:
//  * eot/eom/fim ids not given are found by token text ("<|eot_id|>", "<|fim_pad|>", ...);
//  * tokens whose text names an end of generation ("<|im_end|>", "<|end|>", "</s>", ...) join the
//    EOG set, as do eos, eot, eom and the fim pad/rep/sep tokens;
//  * every token found this way becomes Control (llama.cpp ORs in its CONTROL attribute);
//  * the gpt-oss and gemma4 exceptions ("<|end|>" / "</s>" leave the EOG set when their families'
//    markers are present).
// vocab.eog_ids is replaced (sorted, unique). Ids out of range are ignored. Where llama.cpp picks one
// of several matching texts in hash-map order, this picks the lowest id.
void apply_special_token_rules(Vocab& vocab, const SpecialTokenIds& ids);

}  // namespace glass::tokenizer
