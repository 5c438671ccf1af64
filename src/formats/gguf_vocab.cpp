#include "formats/gguf_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string>

#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace glass::formats {
namespace {

using tokenizer::TokenType;

constexpr std::string_view kModel = "tokenizer.ggml.model";
constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kScores = "tokenizer.ggml.scores";
constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kAddBos = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kAddEos = "tokenizer.ggml.add_eos_token";
constexpr std::string_view kAddSep = "tokenizer.ggml.add_sep_token";
constexpr std::string_view kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
constexpr std::string_view kPre = "tokenizer.ggml.pre";
constexpr std::string_view kMerges = "tokenizer.ggml.merges";
constexpr std::string_view kLowercase = "tokenizer.ggml.normalizer.lowercase";
constexpr std::string_view kStripAccents = "tokenizer.ggml.normalizer.strip_accents";

// Where a special token id lives. Later rows win over earlier ones for the same slot, as the
// deprecated prefix/suffix/middle keys do in llama.cpp.
enum class Slot { Bos, Eos, Unk, Sep, Pad, Eot, Eom, FimPre, FimSuf, FimMid, FimPad, FimRep, FimSep, kCount };
struct IdKey {
  std::string_view key;
  Slot slot;
  bool out_of_range_is_none;  // llama.cpp ignores a bad id; glass does too where models ship one
};
constexpr std::array<IdKey, 16> kIdKeys = {{
    {"tokenizer.ggml.bos_token_id", Slot::Bos, false},
    {"tokenizer.ggml.eos_token_id", Slot::Eos, false},
    {"tokenizer.ggml.unknown_token_id", Slot::Unk, false},
    {"tokenizer.ggml.seperator_token_id", Slot::Sep, false},  // sic: llama.cpp's key
    {"tokenizer.ggml.padding_token_id", Slot::Pad, true},
    {"tokenizer.ggml.eot_token_id", Slot::Eot, false},
    {"tokenizer.ggml.eom_token_id", Slot::Eom, false},
    {"tokenizer.ggml.fim_pre_token_id", Slot::FimPre, false},
    {"tokenizer.ggml.fim_suf_token_id", Slot::FimSuf, false},
    {"tokenizer.ggml.fim_mid_token_id", Slot::FimMid, false},
    {"tokenizer.ggml.fim_pad_token_id", Slot::FimPad, false},
    {"tokenizer.ggml.fim_rep_token_id", Slot::FimRep, false},
    {"tokenizer.ggml.fim_sep_token_id", Slot::FimSep, false},
    {"tokenizer.ggml.prefix_token_id", Slot::FimPre, false},
    {"tokenizer.ggml.suffix_token_id", Slot::FimSuf, false},
    {"tokenizer.ggml.middle_token_id", Slot::FimMid, false},
}};

// llama.cpp's per-model defaults (llama_vocab::impl::load), used when a key is absent.
struct ModelDefaults {
  std::array<int32_t, static_cast<size_t>(Slot::kCount)> ids;  // -1: none
  bool add_bos, add_sep, add_space_prefix;
};
ModelDefaults defaults_for(std::string_view model) {
  ModelDefaults d{};
  d.ids.fill(-1);
  auto set = [&](Slot s, int32_t id) { d.ids[static_cast<size_t>(s)] = id; };
  if (model == "llama") {  // SentencePiece
    set(Slot::Bos, 1), set(Slot::Eos, 2), set(Slot::Unk, 0);
    d.add_bos = true, d.add_space_prefix = true;
  } else if (model == "bert") {  // WordPiece
    set(Slot::Bos, 101), set(Slot::Unk, 100), set(Slot::Sep, 102), set(Slot::Pad, 0);
    d.add_bos = true, d.add_sep = true;
  } else if (model == "gpt2") {  // BPE
    set(Slot::Bos, 11), set(Slot::Eos, 11);
  }
  return d;
}

bool is_signed_integer(GgufValueType t) {
  return t == GgufValueType::I8 || t == GgufValueType::I16 || t == GgufValueType::I32 ||
         t == GgufValueType::I64;
}

Error invalid(const GgufFile& file, std::string_view key, const std::string& message) {
  return make_error(ErrorCode::InvalidFile, fmt::format("gguf: {}: key '{}': {}", file.path(), key, message));
}

Result<bool> get_bool_or(const GgufFile& file, std::string_view key, bool fallback) {
  if (file.find(key) == nullptr) return fallback;
  return file.get_bool(key);
}

// The token type from its GGUF number; unknown numbers read as Undefined (llama.cpp does the same).
TokenType to_token_type(int32_t t) {
  return t >= 0 && t <= static_cast<int32_t>(TokenType::Byte) ? static_cast<TokenType>(t)
                                                              : TokenType::Undefined;
}

// llama.cpp gives every special token of a model named Phi-3 the RSTRIP attribute (swallow the
// whitespace after it), except <unk>, <s> and <|endoftext|>; "</s>" gets it too.
void apply_phi3_rstrip(const GgufFile& file, tokenizer::Vocab& v) {
  const GgufValue* name_value = file.find("general.name");
  if (name_value == nullptr || name_value->type != GgufValueType::STRING) return;
  std::string name(name_value->str);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) return;
  v.strip.assign(v.tokens.size(), tokenizer::kStripNone);
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const TokenType t = v.types[i];
    const std::string_view text = v.tokens[i];
    const bool special = t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
    if ((special || text == "</s>") && text != "<unk>" && text != "<s>" && text != "<|endoftext|>") {
      v.strip[i] = tokenizer::kStripRight;
    }
  }
}

// tokenizer.ggml.pre (BPE models): its llama.cpp defaults, checked before anything else is read.
Result<tokenizer::LlamaPre> read_pre(const GgufFile& file, tokenizer::Vocab& v) {
  if (file.find(kPre) != nullptr) {
    Result<std::string> pre = file.get_string(kPre);
    if (!pre) return pre.error();
    v.pre = std::move(pre).value();
  }
  Result<tokenizer::LlamaPre> pre = tokenizer::llama_pre(v.model == "gemma4" ? "gemma4" : v.pre);
  if (!pre)
    return make_error(pre.error().code, fmt::format("{} (gguf: {})", pre.error().message, file.path()));
  return pre;
}

// tokenizer.ggml.merges: "left right" split at the first space after the first byte (llama.cpp).
Status read_merges(const GgufFile& file, tokenizer::Vocab& v) {
  if (file.find(kMerges) == nullptr)
    return invalid(file, kMerges, "missing: a BPE vocabulary needs its merges");
  Result<const GgufStrings*> views = file.get_string_views(kMerges);
  if (!views) return views.error();
  const GgufStrings& merges = **views;
  size_t bytes = 0;
  for (const std::string_view m : merges) bytes += m.size();
  v.merges.reserve(merges.size(), bytes);
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string_view m = merges[i];
    const size_t space = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
    if (space == std::string::npos)
      return invalid(file, kMerges, fmt::format("merge {} ('{}') has no space", i, m));
    if (!v.merges.add(m.substr(0, space), m.substr(space + 1)))
      return invalid(file, kMerges,
                     fmt::format("the merges take more than {} bytes", tokenizer::MergeList::kMaxBytes));
  }
  return {};
}

}  // namespace

Result<tokenizer::Vocab> vocab_from_gguf(const GgufFile& file) {
  tokenizer::Vocab v;
  {
    Result<std::string> model = file.get_string(kModel);
    if (!model) return model.error();
    v.model = std::move(model).value();
  }
  if (Status s = tokenizer::check_supported_model(v.model); !s) {
    return make_error(s.error().code, fmt::format("{} (gguf: {})", s.error().message, file.path()));
  }
  ModelDefaults defaults = defaults_for(v.model);
  const bool bpe = v.model == "gpt2" || v.model == "gemma4";
  if (bpe) {
    Result<tokenizer::LlamaPre> pre = read_pre(file, v);
    if (!pre) return pre.error();
    defaults.add_bos = pre->add_bos;
    defaults.add_sep = pre->add_sep;
  }

  // The token list against the embedding it indexes, before one string is built: a small model file
  // must not make millions of tokens that loading rejects afterwards (the loader requires equality).
  if (const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
      embd != nullptr && !embd->shape.empty()) {
    const GgufValue* t = file.find(kTokens);
    if (t != nullptr && t->type == GgufValueType::ARRAY && t->count > static_cast<uint64_t>(embd->shape[0]))
      return invalid(
          file, kTokens,
          fmt::format("{} tokens but tensor 'token_embd.weight' has {} rows", t->count, embd->shape[0]));
  }
  {
    // Read straight from the file's views into one buffer: no string per token on the way.
    Result<const GgufStrings*> texts = file.get_string_views(kTokens);
    if (!texts) return texts.error();
    const GgufStrings& tokens = **texts;
    const size_t n = tokens.size();
    if (n == 0) return invalid(file, kTokens, "no tokens");
    if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
      return invalid(file, kTokens, fmt::format("{} tokens exceed the int32 id range", n));
    }
    size_t bytes = 0;
    for (std::string_view t : tokens) bytes += t.size();
    v.tokens.reserve(n, bytes);
    for (size_t i = 0; i < n; ++i) {
      const std::string_view text = tokens[i];
      if (const size_t bad = tokenizer::unicode::first_invalid(text); bad != std::string::npos) {
        return invalid(file, kTokens,
                       fmt::format("token {} is not valid UTF-8 (byte 0x{:02X} at offset {})", i,
                                   static_cast<uint8_t>(text[bad]), bad));
      }
      const std::string placeholder = text.empty() ? fmt::format("[EMPTY_{}]", i) : std::string();
      if (!v.tokens.add(text.empty() ? std::string_view(placeholder) : text))
        return invalid(
            file, kTokens,
            fmt::format("the token texts take more than {} bytes", tokenizer::TokenTexts::kMaxBytes));
    }
  }
  const size_t n = v.tokens.size();
  if (bpe) {
    if (Status s = read_merges(file, v); !s) return s.error();
  }

  if (file.find(kScores) != nullptr) {
    Result<std::vector<float>> scores = file.get_f32_array(kScores);
    if (!scores) return scores.error();
    if (scores->size() != n)
      return invalid(file, kScores, fmt::format("{} values for {} tokens", scores->size(), n));
    v.scores = std::move(scores).value();
  } else {
    v.scores.assign(n, 0.0f);
  }

  if (file.find(kTokenType) != nullptr) {
    Result<std::vector<int32_t>> types = file.get_i32_array(kTokenType);
    if (!types) return types.error();
    if (types->size() != n)
      return invalid(file, kTokenType, fmt::format("{} values for {} tokens", types->size(), n));
    v.types.reserve(n);
    for (int32_t t : *types) v.types.push_back(to_token_type(t));
  } else {
    v.types.assign(n, TokenType::Normal);
  }

  // Defaults first (one out of range means none, as llama.cpp), then the keys.
  std::array<int32_t, static_cast<size_t>(Slot::kCount)> slots = defaults.ids;
  for (int32_t& id : slots) {
    if (id >= 0 && static_cast<size_t>(id) >= n) id = -1;
  }
  for (const IdKey& k : kIdKeys) {
    int32_t& id = slots[static_cast<size_t>(k.slot)];
    if (file.find(k.key) == nullptr) continue;
    const GgufValue* raw = file.find(k.key);
    if (is_signed_integer(raw->type) && raw->i64 < 0) {
      id = -1;
      continue;
    }
    Result<uint32_t> value = file.get_u32(k.key);
    if (!value) return value.error();
    if (*value == std::numeric_limits<uint32_t>::max()) {
      id = -1;
    } else if (*value < n) {
      id = static_cast<int32_t>(*value);
    } else if (k.out_of_range_is_none) {
      id = -1;
    } else {
      return invalid(file, k.key, fmt::format("token id {} is out of range [0, {})", *value, n));
    }
  }
  v.bos_id = slots[static_cast<size_t>(Slot::Bos)];
  v.eos_id = slots[static_cast<size_t>(Slot::Eos)];
  v.unk_id = slots[static_cast<size_t>(Slot::Unk)];
  v.pad_id = slots[static_cast<size_t>(Slot::Pad)];
  v.sep_id = slots[static_cast<size_t>(Slot::Sep)];

  // The model's defaults (SentencePiece: BOS yes, space prefix yes; BPE: as its pre-tokenizer says).
  for (auto [key, flag, fallback] :
       {std::tuple{kAddBos, &v.add_bos, defaults.add_bos}, std::tuple{kAddEos, &v.add_eos, false},
        std::tuple{kAddSep, &v.add_sep, defaults.add_sep},
        std::tuple{kAddSpacePrefix, &v.add_space_prefix, defaults.add_space_prefix},
        std::tuple{kLowercase, &v.normalizer_lowercase, true}}) {
    Result<bool> value = get_bool_or(file, key, fallback);
    if (!value) return value.error();
    *flag = *value;
  }
  // strip_accents follows lowercase unless given (llama.cpp).
  {
    Result<bool> strip = get_bool_or(file, kStripAccents, v.normalizer_lowercase);
    if (!strip) return strip.error();
    v.normalizer_strip_accents = *strip;
  }

  tokenizer::SpecialTokenIds special;
  special.eot = slots[static_cast<size_t>(Slot::Eot)];
  special.eom = slots[static_cast<size_t>(Slot::Eom)];
  special.fim_pre = slots[static_cast<size_t>(Slot::FimPre)];
  special.fim_suf = slots[static_cast<size_t>(Slot::FimSuf)];
  special.fim_mid = slots[static_cast<size_t>(Slot::FimMid)];
  special.fim_pad = slots[static_cast<size_t>(Slot::FimPad)];
  special.fim_rep = slots[static_cast<size_t>(Slot::FimRep)];
  special.fim_sep = slots[static_cast<size_t>(Slot::FimSep)];
  tokenizer::apply_special_token_rules(v, special);
  apply_phi3_rstrip(file, v);
  return v;
}

}  // namespace glass::formats
