#pragma once
// Text <-> token ids. A GGUF vocabulary behaves as llama.cpp's llama_tokenize / llama_token_to_piece /
// llama_detokenize; an HF tokenizer.json behaves as HF tokenizers' encode / decode (pipeline.h says
// what differs). A Tokenizer is immutable and cheap to copy (it shares its state); it is safe to use
// from several threads at once.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/vocab.h"

namespace glass::tokenizer {

// Ok when `model` (GGUF tokenizer.ggml.model) names an algorithm glass implements: "llama"
// (SentencePiece), "gpt2" and "gemma4" (BPE), "bert" (WordPiece); otherwise an Unsupported error
// naming it, e.g. "tokenizer: model 't5' (Unigram) is not supported yet". Loaders call it before
// reading the rest of a vocabulary.
Status check_supported_model(std::string_view model);

struct DecodeOptions {
  // Render special tokens: llama.cpp's Control / Unknown tokens, HF's special added tokens (HF's
  // skip_special_tokens is the opposite).
  bool special = false;
  // Apply the tokenizer's configured space clean-up (llama.cpp's clean_spaces, transformers'
  // clean_up_tokenization_spaces); a tokenizer without one decodes as without this flag.
  bool clean_up = false;
};

class Tokenizer {
 public:
  // A GGUF vocabulary with llama.cpp's pipeline for its model (llama_cpp_pipeline).
  static Result<Tokenizer> create(Vocab vocab);
  // Validates the vocabulary: one score and type per token, non-empty unique token texts, no NaN
  // score, special ids in range (or -1), BOS/EOS present when they are to be added, merges and
  // added tokens that name tokens. Unsupported models fail with ErrorCode::Unsupported, bad data
  // with InvalidArgument.
  static Result<Tokenizer> create(Vocab vocab, Pipeline pipeline);

  // add_special: put the configured tokens around the text (llama.cpp: BOS / EOS as the vocabulary
  // says; HF: the post-processor's template). It adds them even when the text already spells them
  // (both references do; see begins_with_bos to avoid a double BOS).
  // parse_special: special token texts in `text` become those tokens (llama.cpp: Control / Unknown;
  // UserDefined ones always do. HF: special added tokens; the others always do).
  // Fails when a character cannot be encoded at all (no byte token, no unk token), on ill-formed
  // UTF-8 that a normalizer or pre-tokenizer must read (InvalidArgument), or when a text fragment is
  // over 2 GiB (CapacityExceeded).
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes of one token (possibly a partial UTF-8 sequence). llama.cpp: U+2581 reads as ' ',
  // <0xXX> as that byte, byte-level text as its bytes, Control and Unknown tokens as "" unless
  // `special`, Unused/Undefined tokens as "". HF: the decoder chain on this token alone.
  // An id outside [0, vocab_size) gives "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // llama.cpp: the concatenated pieces, with one leading space removed from the first token's piece
  // when the vocabulary adds a space prefix (llama_detokenize with remove_special = false).
  // HF: the decoder chain over the tokens' strings, skipping special tokens unless `special`.
  // Out-of-range ids contribute nothing.
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;
  std::string decode(const std::vector<int32_t>& ids, const DecodeOptions& options) const;

  // The token's string as the vocabulary spells it ("Ġworld", "▁Hello", "<0x0A>"; HF: an added
  // token with normalized = true in its normalized form, as HF's id_to_token). "" when out of range.
  std::string token_text(int32_t id) const;

  // True when `ids` starts with the BOS this tokenizer adds: a caller whose text already begins
  // with BOS (a rendered chat template) encodes it with add_special = false so BOS is not doubled.
  bool begins_with_bos(const std::vector<int32_t>& ids) const;

  bool is_eog(int32_t id) const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t vocab_size() const;
  bool add_bos() const;           // add_special puts BOS first
  bool add_space_prefix() const;  // llama.cpp SentencePiece's leading-space rule applies
  Flavor flavor() const;
  CleanUp clean_up() const;
  const Vocab& vocab() const;

  struct Impl;  // opaque: tokenizer_impl.h, private to the tokenizer module

 private:
  friend class StreamingDecoder;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::string hf_decode(const std::vector<int32_t>& ids, bool special) const;
  std::shared_ptr<const Impl> impl_;
};

struct StreamOptions {
  bool special = false;  // render special tokens (as DecodeOptions::special)
  // The ids continue text already shown (generation after a prompt): no token is a first token, so
  // no leading space is removed. llama.cpp: the output is the plain concatenation of
  // token_to_piece, which is what llama.cpp's tools print while generating. HF: decoded as if one
  // ordinary token came before.
  bool continuation = false;
};

// Decodes a token stream piece by piece. An incomplete UTF-8 sequence at the end of the text so far
// is held back until the bytes that complete it arrive, so when the whole decoded text is valid
// UTF-8 every returned string is too. llama.cpp flavour: bytes that cannot start or continue a valid
// sequence are passed through as they are (never held forever); HF flavour: HF's DecodeStream (the
// text of the ids since a recent anchor is decoded again and only its new suffix is returned).
// With default options, push(ids[0]) + ... + push(ids[n-1]) + flush() == tokenizer.decode(ids,
// special) for llama.cpp vocabularies and for HF decoders without whole-text steps (every fixture
// tokenizer). The Tokenizer must outlive the decoder.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, StreamOptions options = {});

  std::string push(int32_t id);
  // Returns whatever is held back and starts a new stream (with continuation off, the next push is
  // a first token again).
  std::string flush();

 private:
  std::string push_hf(int32_t id);
  void reset();

  const Tokenizer& tokenizer_;
  StreamOptions options_;
  bool first_;
  std::string pending_;
  // HF: the ids since the anchor, the decode of ids_[0, prefix_index_) and its length.
  std::vector<int32_t> ids_;
  std::string prefix_;
  size_t prefix_index_ = 0;
};

}  // namespace glass::tokenizer
