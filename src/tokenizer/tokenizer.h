#pragma once
// Text <-> token ids, as llama.cpp's llama_tokenize / llama_token_to_piece / llama_detokenize do it.
// A Tokenizer is immutable and cheap to copy (it shares its state); it is safe to use from several
// threads at once. The algorithm (SentencePiece now) sits behind tokenizer/algorithm.h.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "tokenizer/vocab.h"

namespace glass::tokenizer {

// Ok when `model` (GGUF tokenizer.ggml.model) names an algorithm glass implements ("llama", i.e.
// SentencePiece); otherwise an Unsupported error naming it, e.g. "tokenizer: model 'gpt2' (byte-level
// BPE) is not supported yet". Loaders call it before reading the rest of a vocabulary.
Status check_supported_model(std::string_view model);

class Tokenizer {
 public:
  // Validates the vocabulary: a supported model, one score and type per token, non-empty unique
  // token texts, no NaN score, special ids in range (or -1), BOS/EOS present when they are to be
  // added. Unsupported models fail with ErrorCode::Unsupported, bad data with InvalidArgument.
  static Result<Tokenizer> create(Vocab vocab);

  // add_special: prepend BOS / append EOS as the vocabulary says (add_bos / add_eos).
  // parse_special: Control and Unknown token texts in `text` become those tokens (UserDefined ones
  // always do). Fails only when a character cannot be encoded at all (no byte token, no unk token:
  // InvalidArgument; llama.cpp would throw) or a text fragment is over 2 GiB (CapacityExceeded).
  Result<std::vector<int32_t>> encode(std::string_view text, bool add_special, bool parse_special) const;

  // The bytes of one token (possibly a partial UTF-8 sequence): U+2581 reads as ' ', <0xXX> as that
  // byte, Control and Unknown tokens as "" unless `special`, Unused/Undefined tokens as "".
  // An id outside [0, vocab_size) gives "".
  std::string token_to_piece(int32_t id, bool special = false) const;

  // The concatenated pieces, with one leading space removed from the first token's piece when the
  // vocabulary adds a space prefix (llama.cpp's llama_detokenize with remove_special = false).
  // Out-of-range ids contribute "" (see token_to_piece).
  std::string decode(const std::vector<int32_t>& ids, bool special = false) const;

  bool is_eog(int32_t id) const;
  int32_t bos_id() const;
  int32_t eos_id() const;
  int32_t vocab_size() const;
  bool add_bos() const;
  bool add_space_prefix() const;
  const Vocab& vocab() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

struct StreamOptions {
  bool special = false;  // render Control / Unknown tokens (as token_to_piece's `special`)
  // The ids continue text already shown (generation after a prompt): no token is a first token,
  // so no leading space is removed and the output is the plain concatenation of token_to_piece,
  // which is what llama.cpp's tools print while generating.
  bool continuation = false;
};

// Decodes a token stream piece by piece. An incomplete UTF-8 sequence at the end of the text so far
// is held back until the bytes that complete it arrive, so when the whole decoded text is valid
// UTF-8 every returned string is too. Bytes that cannot start or continue a valid sequence are
// passed through as they are (never held forever). With default options,
// push(ids[0]) + ... + push(ids[n-1]) + flush() == tokenizer.decode(ids, special).
// The Tokenizer must outlive the decoder.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, StreamOptions options = {});

  std::string push(int32_t id);
  // Returns whatever is held back and starts a new stream (with continuation off, the next push is
  // a first token again).
  std::string flush();

 private:
  const Tokenizer& tokenizer_;
  StreamOptions options_;
  bool first_;
  std::string pending_;
};

}  // namespace glass::tokenizer
