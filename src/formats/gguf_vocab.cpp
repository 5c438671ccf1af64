#include "formats/gguf_vocab.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <string>

#include "tokenizer/tokenizer.h"

namespace glass::formats {
namespace {

using tokenizer::TokenType;

constexpr std::string_view kModel = "tokenizer.ggml.model";
constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
constexpr std::string_view kScores = "tokenizer.ggml.scores";
constexpr std::string_view kTokenType = "tokenizer.ggml.token_type";
constexpr std::string_view kAddBos = "tokenizer.ggml.add_bos_token";
constexpr std::string_view kAddEos = "tokenizer.ggml.add_eos_token";
constexpr std::string_view kAddSpacePrefix = "tokenizer.ggml.add_space_prefix";

// Where a special token id lives and what it defaults to when the key is absent (llama.cpp's
// SentencePiece defaults; -1 = none). Later rows win over earlier ones for the same slot, as the
// deprecated prefix/suffix/middle keys do in llama.cpp.
enum class Slot { Bos, Eos, Unk, Pad, Eot, Eom, FimPre, FimSuf, FimMid, FimPad, FimRep, FimSep };
struct IdKey {
  std::string_view key;
  Slot slot;
  int32_t spm_default;
  bool out_of_range_is_none;  // llama.cpp ignores a bad id; glass does too where models ship one
};
constexpr std::array<IdKey, 15> kIdKeys = {{
    {"tokenizer.ggml.bos_token_id", Slot::Bos, 1, false},
    {"tokenizer.ggml.eos_token_id", Slot::Eos, 2, false},
    {"tokenizer.ggml.unknown_token_id", Slot::Unk, 0, false},
    {"tokenizer.ggml.padding_token_id", Slot::Pad, -1, true},
    {"tokenizer.ggml.eot_token_id", Slot::Eot, -1, false},
    {"tokenizer.ggml.eom_token_id", Slot::Eom, -1, false},
    {"tokenizer.ggml.fim_pre_token_id", Slot::FimPre, -1, false},
    {"tokenizer.ggml.fim_suf_token_id", Slot::FimSuf, -1, false},
    {"tokenizer.ggml.fim_mid_token_id", Slot::FimMid, -1, false},
    {"tokenizer.ggml.fim_pad_token_id", Slot::FimPad, -1, false},
    {"tokenizer.ggml.fim_rep_token_id", Slot::FimRep, -1, false},
    {"tokenizer.ggml.fim_sep_token_id", Slot::FimSep, -1, false},
    {"tokenizer.ggml.prefix_token_id", Slot::FimPre, -1, false},
    {"tokenizer.ggml.suffix_token_id", Slot::FimSuf, -1, false},
    {"tokenizer.ggml.middle_token_id", Slot::FimMid, -1, false},
}};

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
    const std::string& text = v.tokens[i];
    const bool special = t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown;
    if ((special || text == "</s>") && text != "<unk>" && text != "<s>" && text != "<|endoftext|>") {
      v.strip[i] = tokenizer::kStripRight;
    }
  }
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

  {
    Result<std::vector<std::string>> tokens = file.get_string_array(kTokens);
    if (!tokens) return tokens.error();
    v.tokens = std::move(tokens).value();
  }
  const size_t n = v.tokens.size();
  if (n == 0) return invalid(file, kTokens, "no tokens");
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return invalid(file, kTokens, fmt::format("{} tokens exceed the int32 id range", n));
  }
  for (size_t i = 0; i < n; ++i) {
    if (v.tokens[i].empty()) v.tokens[i] = fmt::format("[EMPTY_{}]", i);
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

  std::array<int32_t, 12> slots{};
  slots.fill(-1);
  for (const IdKey& k : kIdKeys) {
    int32_t& id = slots[static_cast<size_t>(k.slot)];
    if (file.find(k.key) == nullptr) {
      if (k.spm_default >= 0 && static_cast<size_t>(k.spm_default) < n && id < 0) id = k.spm_default;
      continue;
    }
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

  // SentencePiece defaults, as llama.cpp: BOS yes, EOS no, space prefix yes.
  for (auto [key, flag, fallback] :
       {std::tuple{kAddBos, &v.add_bos, true}, std::tuple{kAddEos, &v.add_eos, false},
        std::tuple{kAddSpacePrefix, &v.add_space_prefix, true}}) {
    Result<bool> value = get_bool_or(file, key, fallback);
    if (!value) return value.error();
    *flag = *value;
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
