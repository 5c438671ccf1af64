#pragma once
// Everything a Tokenizer runs besides the vocabulary itself, in one of two flavours:
//  * LlamaCpp (GGUF vocabularies): llama.cpp's special-token partition by token type, its BOS/EOS
//    rules and its token_to_piece / detokenize. llama_cpp_pipeline() derives it from the Vocab
//    (tokenizer.ggml.model and .pre).
//  * HuggingFace (tokenizer.json): added tokens matched with their lstrip / rstrip / single_word /
//    normalized flags, the normalizer, pre-tokenizer and model, the post-processor's template and the
//    decoder chain. hf_tokenizer.h builds it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "glass/result.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/pipeline_algorithm.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab.h"
#include "tokenizer/wordpiece.h"

namespace glass::tokenizer {

enum class Flavor { LlamaCpp, HuggingFace };
enum class ModelKind {
  Spm,        // SentencePiece, score-based merges (llama.cpp "llama")
  Bpe,        // rank-based BPE (byte-level or over U+2581 text)
  WordPiece,  // HF WordPiece
  Wpm,        // llama.cpp's WordPiece for GGUF "bert"
};
// Spaces cleaned up after decoding, when asked for (DecodeOptions::clean_up).
enum class CleanUp { None, LlamaCpp, Transformers };

struct Pipeline {
  Flavor flavor = Flavor::LlamaCpp;
  Normalizer normalizer;       // applied to each text fragment (HF; llama.cpp's ' ' -> U+2581 escape)
  PreTokenizer pre_tokenizer;  // Bpe / WordPiece: splits a fragment into words
  ModelKind model = ModelKind::Spm;
  BpeOptions bpe;
  WordPieceOptions wordpiece;
  bool wpm_lowercase = true, wpm_strip_accents = true;  // ModelKind::Wpm
  PieceStyle pieces = PieceStyle::Metaspace;            // LlamaCpp: how Normal tokens read back
  std::vector<AddedToken> added_tokens;                 // HuggingFace
  std::vector<int32_t> prefix, suffix;                  // ids add_special puts around the text
  std::optional<Decoder> decoder;                       // HuggingFace (absent: tokens joined by ' ', as HF)
  CleanUp clean_up = CleanUp::None;  // the configured clean-up (clean_up_tokenization_spaces)
};

// llama.cpp's pre-tokenizer for a GGUF tokenizer.ggml.pre value (BPE vocabularies).
struct LlamaPre {
  std::vector<std::string> regexes;  // applied in turn, each splitting the pieces of the one before
  bool byte_encode = true;           // GPT-2 byte mapping (false: raw UTF-8 with U+2581 spaces)
  bool ignore_merges = false;
  bool clean_spaces = true;
  bool add_bos = false;  // the default when tokenizer.ggml.add_bos_token is absent
  bool add_sep = false;  // the default when tokenizer.ggml.add_sep_token is absent
};
// Unsupported (naming the value) for a pre-tokenizer llama.cpp does not know, or one that needs
// llama.cpp's hand-written splitters (kimi-k2, afmoe).
Result<LlamaPre> llama_pre(std::string_view pre);
// Every .pre value llama_pre accepts.
std::vector<std::string> llama_pre_names();

// The llama.cpp pipeline of a GGUF vocabulary (models "llama", "gpt2", "bert").
Result<Pipeline> llama_cpp_pipeline(const Vocab& vocab);

}  // namespace glass::tokenizer
