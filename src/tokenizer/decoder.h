#pragma once
// HF tokenizers' decoders (tokenizers/src/decoders): a chain of steps, each rewriting the list of
// token strings (Sequence is flattened), then joined. Steps that look at one token at a time still
// see where it sits (Metaspace and WordPiece treat the first token differently, BPEDecoder the last).
#include <string>
#include <variant>
#include <vector>

namespace glass::tokenizer {

struct ByteLevelDecode {};     // GPT-2 characters -> bytes, then U+FFFD for ill-formed UTF-8
struct ByteFallbackDecode {};  // runs of <0xXX> tokens -> their bytes (each one U+FFFD when ill-formed)
struct FuseDecode {};          // all tokens -> one
struct StripDecode {           // drop up to `start` / `stop` copies of `content` at each token's ends
  std::string content = " ";
  size_t start = 0;
  size_t stop = 0;
};
struct ReplaceDecode {  // literal replacement in each token
  std::string pattern;
  std::string content;
};
struct MetaspaceDecode {  // the replacement character -> ' '; dropped in the first token unless
  std::string replacement = "\xE2\x96\x81";  // prepend_scheme is "never"
  bool prepend = true;
};
struct WordPieceDecode {  // "##x" joins its predecessor, other tokens get a space before them
  std::string prefix = "##";
  bool cleanup = true;
};
struct BpeSuffixDecode {  // BPEDecoder: the suffix -> ' ' (nothing in the last token)
  std::string suffix = "</w>";
};

using DecoderStep = std::variant<ByteLevelDecode, ByteFallbackDecode, FuseDecode, StripDecode, ReplaceDecode,
                                 MetaspaceDecode, WordPieceDecode, BpeSuffixDecode>;

class Decoder {
 public:
  Decoder() = default;
  explicit Decoder(std::vector<DecoderStep> steps) : steps_(std::move(steps)) {}

  // The decoded text. Always well-formed UTF-8 when the steps include ByteLevel or ByteFallback
  // (HF tokenizers returns Rust strings); the chain is applied as HF does for an empty list too.
  std::string decode(std::vector<std::string> tokens) const;

 private:
  std::vector<DecoderStep> steps_;
};

// transformers' clean_up_tokenization (and HF's WordPiece cleanup): " ." -> ".", " n't" -> "n't", ...
std::string clean_up_tokenization(std::string text);
// llama.cpp's detokenizer clean-up (clean_spaces): no space before ?!., ; " ' " -> "'"; " 's", " 'm",
// " 're", " 've" lose their space.
std::string clean_up_llama_cpp(std::string_view text);

}  // namespace glass::tokenizer
