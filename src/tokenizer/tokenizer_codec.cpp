// Tokenizer::encode and decode for both flavours (pipeline.h).
#include "tokenizer/special.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_impl.h"

namespace glass::tokenizer {
namespace {

using Ids = std::vector<int32_t>;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" token, or -1 when the text has no two hex digits at [3, 5) (llama.cpp
// reads those two digits whatever surrounds them).
int byte_of_token(std::string_view text) {
  if (text.size() < 5) return -1;
  const int hi = hex_digit(text[3]), lo = hex_digit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// llama.cpp's token_to_piece(special = true) for token i, computed per call (a table of them cost
// a second copy of the vocabulary's text): Control, Unknown and UserDefined tokens read as their
// text, Normal ones through the algorithm's piece style, Byte tokens as their byte (a malformed
// one as ""), Undefined and Unused ones as nothing.
std::string llama_piece(const Tokenizer::Impl& impl, size_t i) {
  const std::string_view text = impl.vocab.tokens[i];
  switch (impl.vocab.types[i]) {
    case TokenType::Control:
    case TokenType::Unknown:
    case TokenType::UserDefined:
      return std::string(text);
    case TokenType::Normal:
      return impl.algorithm->normal_piece(text);
    case TokenType::Byte:
      if (const int b = byte_of_token(text); b >= 0) return std::string(1, static_cast<char>(b));
      return {};
    case TokenType::Undefined:
    case TokenType::Unused:
      break;
  }
  return {};
}

// Control and Unknown tokens render as "" unless special.
bool hidden(const Tokenizer::Impl& impl, size_t i) {
  const TokenType t = impl.vocab.types[i];
  return t == TokenType::Control || t == TokenType::Unknown;
}

// llama.cpp: special tokens split out by type, then each raw fragment through the algorithm.
Status encode_llama(const Tokenizer::Impl& impl, std::string_view text, bool parse_special, Ids& out,
                    EncodeScratch* scratch) {
  // The first fragment, and every fragment after a special token, starts a segment (llama.cpp's
  // is_prev_special): SentencePiece gives it a space prefix.
  Segment segment;
  for (const Fragment& f : split_special_tokens(text, impl.vocab, impl.special_order, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      segment.segment_start = true;
      continue;
    }
    const std::string_view raw = text.substr(f.offset, f.length);
    segment.text_start = f.offset == 0;
    Status s;
    if (impl.pipeline.normalizer.empty()) {
      s = impl.algorithm->encode(raw, segment, out, scratch);
    } else {
      Result<std::string> normalized = impl.pipeline.normalizer.apply(raw);
      if (!normalized) return normalized.error();
      s = impl.algorithm->encode(*normalized, segment, out, scratch);
    }
    if (!s) return s;
    segment.segment_start = false;
  }
  return {};
}

// HF AddedVocabulary::extract_and_normalize, then pre-tokenizer and model per piece.
Status encode_hf(const Tokenizer::Impl& impl, std::string_view text, bool parse_special, Ids& out,
                 EncodeScratch* scratch) {
  for (const Fragment& f : impl.added_raw.empty() ? std::vector<Fragment>{{-1, 0, text.size()}}
                                                  : impl.added_raw.split(text, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      continue;
    }
    if (f.length == 0) continue;
    Result<std::string> normalized = impl.pipeline.normalizer.apply(text.substr(f.offset, f.length));
    if (!normalized) return normalized.error();
    const std::string& s = *normalized;
    for (const Fragment& g : impl.added_normalized.empty() ? std::vector<Fragment>{{-1, 0, s.size()}}
                                                           : impl.added_normalized.split(s, parse_special)) {
      if (g.token >= 0) {
        out.push_back(g.token);
        continue;
      }
      if (g.length == 0) continue;
      const Segment segment{true, f.offset == 0 && g.offset == 0};
      const std::string_view piece = std::string_view(s).substr(g.offset, g.length);
      if (Status st = impl.algorithm->encode(piece, segment, out, scratch); !st) return st;
    }
  }
  return {};
}

std::string clean(std::string text, CleanUp c) {
  switch (c) {
    case CleanUp::LlamaCpp:
      return clean_up_llama_cpp(text);
    case CleanUp::Transformers:
      return clean_up_tokenization(std::move(text));
    case CleanUp::None:
      break;
  }
  return text;
}

}  // namespace

Result<Ids> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& impl = *impl_;
  Ids out;
  if (add_special) out = impl.pipeline.prefix;
  const std::unique_ptr<EncodeScratch> scratch = impl.algorithm->new_scratch();
  const Status s = impl.pipeline.flavor == Flavor::LlamaCpp
                       ? encode_llama(impl, text, parse_special, out, scratch.get())
                       : encode_hf(impl, text, parse_special, out, scratch.get());
  if (!s) return s.error();
  if (add_special) out.insert(out.end(), impl.pipeline.suffix.begin(), impl.pipeline.suffix.end());
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (flavor() == Flavor::HuggingFace) return hf_decode({id}, special);
  const auto i = static_cast<size_t>(id);
  if (!special && hidden(*impl_, i)) return {};
  return llama_piece(*impl_, i);
}

std::string Tokenizer::hf_decode(const Ids& ids, bool special) const {
  const Impl& impl = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) continue;
    const auto i = static_cast<size_t>(id);
    if (impl.vocab.types[i] == TokenType::Unused) continue;  // an id the tokenizer.json does not define
    if (!special && impl.hf_skip[i]) continue;
    tokens.emplace_back(impl.decode_string(id));
  }
  if (!impl.pipeline.decoder) {
    std::string out;
    for (size_t k = 0; k < tokens.size(); ++k) out += (k ? " " : "") + tokens[k];
    return out;
  }
  return impl.pipeline.decoder->decode(std::move(tokens));
}

std::string Tokenizer::decode(const Ids& ids, bool special) const {
  return decode(ids, DecodeOptions{special, false});
}

std::string Tokenizer::decode(const Ids& ids, const DecodeOptions& options) const {
  std::string out;
  if (flavor() == Flavor::HuggingFace) {
    out = hf_decode(ids, options.special);
  } else {
    bool first = true;
    for (int32_t id : ids) {
      std::string piece = token_to_piece(id, options.special);
      // llama.cpp strips the space its encoder prepended, from the first token only, even when that
      // token renders as nothing (a hidden BOS): "<s>▁Hello" decodes to " Hello".
      if (first && add_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      first = false;
      out += piece;
    }
  }
  return options.clean_up ? clean(std::move(out), clean_up()) : out;
}

}  // namespace glass::tokenizer
