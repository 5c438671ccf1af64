#include "tokenizer/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tokenizer/algorithm.h"
#include "tokenizer/special.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_index.h"

namespace glass::tokenizer {

struct Tokenizer::Impl {
  Vocab vocab;
  TokenIndex index;
  std::unique_ptr<Algorithm> algorithm;  // refers to vocab and index
  std::vector<int32_t> special_order;    // split_special_tokens candidates
  std::vector<std::string> pieces;       // token_to_piece(id, special = true)
  std::vector<bool> hidden;              // Control / Unknown: "" unless special
  std::vector<int32_t> eog_sorted;
};

namespace {

Error invalid(std::string message) { return make_error(ErrorCode::InvalidArgument, "tokenizer: " + message); }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" token, or -1 when the text has no two hex digits at [3, 5).
int byte_of_token(std::string_view text) {
  if (text.size() < 5) return -1;
  const int hi = hex_digit(text[3]), lo = hex_digit(text[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

Status validate(const Vocab& v) {
  if (Status s = check_supported_model(v.model); !s) return s;
  const size_t n = v.tokens.size();
  if (n == 0) return invalid("the vocabulary has no tokens");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid(fmt::format("{} tokens exceed the int32 id range", n));
  }
  if (v.scores.size() != n) return invalid(fmt::format("{} scores for {} tokens", v.scores.size(), n));
  if (v.types.size() != n) return invalid(fmt::format("{} token types for {} tokens", v.types.size(), n));
  if (!v.strip.empty() && v.strip.size() != n) {
    return invalid(fmt::format("{} strip flags for {} tokens", v.strip.size(), n));
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v.scores[i])) return invalid(fmt::format("token {} has a NaN score", i));
    const auto t = static_cast<int32_t>(v.types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::Byte)) {
      return invalid(fmt::format("token {} has type {}, expected 0..6", i, t));
    }
  }
  const auto n32 = static_cast<int32_t>(n);
  const std::pair<const char*, int32_t> ids[] = {
      {"bos_id", v.bos_id}, {"eos_id", v.eos_id}, {"unk_id", v.unk_id}, {"pad_id", v.pad_id}};
  for (const auto& [name, id] : ids) {
    if (id < -1 || id >= n32) return invalid(fmt::format("{} {} is out of range [0, {})", name, id, n));
  }
  for (int32_t id : v.eog_ids) {
    if (id < 0 || id >= n32)
      return invalid(fmt::format("end-of-generation id {} is out of range [0, {})", id, n));
  }
  if (v.add_bos && v.bos_id < 0) return invalid("add_bos is set but the vocabulary has no BOS token");
  if (v.add_eos && v.eos_id < 0) return invalid("add_eos is set but the vocabulary has no EOS token");
  return {};
}

}  // namespace

Status check_supported_model(std::string_view model) {
  if (model == "llama") return {};
  const std::string_view family = model == "gpt2"   ? " (byte-level BPE)"
                                  : model == "bert" ? " (WordPiece)"
                                  : model == "t5"   ? " (Unigram)"
                                  : model == "rwkv" ? " (RWKV)"
                                                    : "";
  return make_error(ErrorCode::Unsupported,
                    fmt::format("tokenizer: model '{}'{} is not supported yet", model, family));
}

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  if (Status s = validate(vocab); !s) return s.error();
  Result<TokenIndex> index = TokenIndex::build(vocab);
  if (!index) return index.error();

  auto impl = std::make_shared<Impl>();
  impl->vocab = std::move(vocab);
  impl->index = std::move(index).value();
  impl->algorithm = std::make_unique<SpmAlgorithm>(impl->vocab, impl->index);
  impl->special_order = special_token_order(impl->vocab);

  const Vocab& v = impl->vocab;
  const size_t n = v.tokens.size();
  impl->pieces.resize(n);
  impl->hidden.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const std::string& text = v.tokens[i];
    switch (v.types[i]) {
      case TokenType::Control:
      case TokenType::Unknown:
        impl->hidden[i] = true;
        impl->pieces[i] = text;
        break;
      case TokenType::UserDefined:
        impl->pieces[i] = text;
        break;
      case TokenType::Normal:
        impl->pieces[i] = impl->algorithm->normal_piece(text);
        break;
      case TokenType::Byte:
        // llama.cpp reads the two hex digits at [3, 5) of "<0xXX>"; a malformed byte token reads as "".
        if (const int b = byte_of_token(text); b >= 0) impl->pieces[i] = std::string(1, static_cast<char>(b));
        break;
      case TokenType::Undefined:
      case TokenType::Unused:
        break;  // llama.cpp renders these as nothing
    }
  }
  impl->eog_sorted = v.eog_ids;
  std::sort(impl->eog_sorted.begin(), impl->eog_sorted.end());
  return Tokenizer(std::move(impl));
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text, bool add_special,
                                               bool parse_special) const {
  const Vocab& v = impl_->vocab;
  std::vector<int32_t> out;
  if (add_special && v.add_bos) out.push_back(v.bos_id);

  // The first fragment, and every fragment after a special token, starts a segment (llama.cpp's
  // is_prev_special): SentencePiece gives it a space prefix.
  bool segment_start = true;
  for (const Fragment& f : split_special_tokens(text, v, impl_->special_order, parse_special)) {
    if (f.token >= 0) {
      out.push_back(f.token);
      segment_start = true;
      continue;
    }
    if (Status s = impl_->algorithm->encode(text.substr(f.offset, f.length), segment_start, out); !s) {
      return s.error();
    }
    segment_start = false;
  }

  if (add_special && v.add_eos) out.push_back(v.eos_id);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= vocab_size()) return {};
  const auto i = static_cast<size_t>(id);
  if (!special && impl_->hidden[i]) return {};
  return impl_->pieces[i];
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool special) const {
  std::string out;
  bool first = true;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, special);
    // llama.cpp strips the space its encoder prepended, from the first token only, even when that
    // token renders as nothing (a hidden BOS): "<s>▁Hello" decodes to " Hello".
    if (first && add_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    first = false;
    out += piece;
  }
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return std::binary_search(impl_->eog_sorted.begin(), impl_->eog_sorted.end(), id);
}
int32_t Tokenizer::bos_id() const { return impl_->vocab.bos_id; }
int32_t Tokenizer::eos_id() const { return impl_->vocab.eos_id; }
int32_t Tokenizer::vocab_size() const { return static_cast<int32_t>(impl_->vocab.tokens.size()); }
bool Tokenizer::add_bos() const { return impl_->vocab.add_bos; }
bool Tokenizer::add_space_prefix() const { return impl_->vocab.add_space_prefix; }
const Vocab& Tokenizer::vocab() const { return impl_->vocab; }

}  // namespace glass::tokenizer
