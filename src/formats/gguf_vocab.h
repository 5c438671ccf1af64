#pragma once
// The tokenizer vocabulary stored in a GGUF file's tokenizer.ggml.* metadata, read the way llama.cpp
// reads it (llama_vocab::impl::load), into the tokenizer module's plain Vocab.
#include "formats/gguf.h"
#include "glass/result.h"
#include "tokenizer/vocab.h"

namespace glass::formats {

// Reads tokenizer.ggml.model ("llama" SentencePiece, "gpt2" / "gemma4" BPE, "bert" WordPiece; another
// model is an Unsupported error naming it, checked before anything else is read), .pre (BPE: an
// unknown value is Unsupported, as in llama.cpp), tokens (well-formed UTF-8, else InvalidFile naming
// the token), merges (BPE: required), scores (absent: 0), token_type (absent: Normal),
// bos/eos/unknown/separator/padding/eot/eom/fim token ids, add_bos_token / add_eos_token /
// add_sep_token / add_space_prefix and the WordPiece normalizer flags, then applies llama.cpp's
// special-token rules (tokenizer::apply_special_token_rules) and its Phi-3 rstrip rule.
// Absent keys take llama.cpp's per-model defaults: SentencePiece BOS 1 / EOS 2 / unk 0, add BOS, space
// prefix; BPE BOS = EOS = 11, add BOS as the pre-tokenizer says (llama3: yes), no space prefix;
// WordPiece BOS (CLS) 101 / unk 100 / SEP 102 / pad 0. A default beyond the vocabulary means none.
// Ids: 0xFFFFFFFF (or a negative signed value) means none; any other id must be < the token count,
// else an InvalidFile error naming the key, except padding_token_id, which llama.cpp (and glass)
// then ignore. Array lengths must equal the token count (InvalidFile, naming the key). An empty token
// text becomes "[EMPTY_<id>]", as in llama.cpp.
Result<tokenizer::Vocab> vocab_from_gguf(const GgufFile& file);

}  // namespace glass::formats
