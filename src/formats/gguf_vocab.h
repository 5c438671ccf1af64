#pragma once
// The tokenizer vocabulary stored in a GGUF file's tokenizer.ggml.* metadata, read the way llama.cpp
// reads it (llama_vocab::impl::load), into the tokenizer module's plain Vocab.
#include "formats/gguf.h"
#include "glass/result.h"
#include "tokenizer/vocab.h"

namespace glass::formats {

// Reads tokenizer.ggml.model ("llama" only for now; another model is an Unsupported error naming it,
// checked before anything else is read), tokens, scores (absent: 0), token_type (absent: Normal),
// bos/eos/unknown/padding/eot/eom/fim token ids, add_bos_token (absent: true), add_eos_token (absent:
// false) and add_space_prefix (absent: true), then applies llama.cpp's special-token rules
// (tokenizer::apply_special_token_rules) and its Phi-3 rstrip rule.
// Ids: 0xFFFFFFFF (or a negative signed value) means none; an absent bos/eos/unknown id takes
// llama.cpp's SentencePiece default (1 / 2 / 0); any other id must be < the token count, else an
// InvalidFile error naming the key, except padding_token_id, which llama.cpp (and glass) then ignore.
// Array lengths must equal the token count (InvalidFile, naming the key). An empty token text
// becomes "[EMPTY_<id>]", as in llama.cpp.
Result<tokenizer::Vocab> vocab_from_gguf(const GgufFile& file);

}  // namespace glass::formats
