// HF tokenizer -> GGUF tokenizer.ggml.* keys (see hf_gguf_vocab.h). The HF files are read by the
// tokenizer module's own loader (ids, added tokens, special tokens, BOS/EOS addition), so the keys
// written describe exactly the tokenizer glass runs for the HF directory; this file only decides
// the GGUF model family and writes.
#include "formats/hf_gguf_vocab.h"

#include <fmt/format.h>

#include <unordered_map>

#include "core/read_file.h"
#include "formats/json_strict.h"
#include "tokenizer/hf_tokenizer.h"

namespace glass::formats {
namespace {

using tokenizer::TokenType;

// The split patterns of the byte-level pre-tokenizers llama.cpp knows, as tokenizer.json spells
// them, with the tokenizer.ggml.pre value convert_hf_to_gguf.py writes for them.
struct KnownSplit {
  std::string_view pre;
  std::string_view regex;
};
constexpr KnownSplit kSplits[] = {
    {"llama-bpe",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"qwen2",
     R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
    {"tekken",
     R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)"},
};

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

Error unsupported(const HfTokenizerFiles& f, std::string_view section, std::string_view what) {
  return make_error(ErrorCode::Unsupported, fmt::format("hf to gguf: {}: {}: {}", f.where, section, what));
}

const Json* member(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string string_member(const Json& j, std::string_view key) {
  const Json* v = member(j, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

bool bool_member(const Json& j, std::string_view key, bool fallback) {
  const Json* v = member(j, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

// A ByteLevel pre-tokenizer: true when it applies GPT-2's own split (use_regex, default true).
Result<bool> byte_level_regex(const HfTokenizerFiles& f, const Json& p, std::string_view where) {
  if (bool_member(p, "add_prefix_space", false))
    return unsupported(f, where, "ByteLevel with add_prefix_space true (llama.cpp adds no prefix space)");
  return bool_member(p, "use_regex", true);
}

// tokenizer.ggml.pre for a byte-level BPE tokenizer, from its pre_tokenizer section.
Result<std::string> byte_level_pre(const HfTokenizerFiles& f, const Json& pre) {
  const std::string type = string_member(pre, "type");
  if (type == "ByteLevel") {
    auto regex = byte_level_regex(f, pre, "pre_tokenizer");
    if (!regex) return regex.error();
    if (*regex) return std::string("gpt-2");
  } else if (type == "Sequence") {
    const Json* list = member(pre, "pretokenizers");
    if (list != nullptr && list->is_array() && list->size() == 2) {
      const Json& split = (*list)[0];
      const Json& bytes = (*list)[1];
      if (string_member(split, "type") == "Split" && string_member(bytes, "type") == "ByteLevel") {
        auto regex = byte_level_regex(f, bytes, "pre_tokenizer.pretokenizers[1]");
        if (!regex) return regex.error();
        const Json* pattern = member(split, "pattern");
        const std::string text = pattern != nullptr ? string_member(*pattern, "Regex") : std::string();
        if (!*regex && string_member(split, "behavior") == "Isolated" && !bool_member(split, "invert", false))
          for (const KnownSplit& k : kSplits)
            if (text == k.regex) return std::string(k.pre);
        return unsupported(f, "pre_tokenizer.pretokenizers[0].pattern",
                           fmt::format("the split pattern '{}' is not one llama.cpp names (known: llama-bpe, "
                                       "qwen2, tekken, gpt-2)",
                                       text));
      }
    }
  }
  return unsupported(f, "pre_tokenizer",
                     fmt::format("'{}' is not a byte-level pre-tokenizer glass can name for llama.cpp "
                                 "(ByteLevel, or Split + ByteLevel)",
                                 pre.is_null() ? std::string("null") : pre.dump().substr(0, 200)));
}

// SentencePiece-style normalizers: [Prepend U+2581,] Replace ' ' -> U+2581. Returns whether a
// space prefix is added.
Result<bool> spm_normalizer(const HfTokenizerFiles& f, const Json& n) {
  std::vector<const Json*> parts;
  if (string_member(n, "type") == "Sequence") {
    if (const Json* list = member(n, "normalizers"); list != nullptr && list->is_array())
      for (const Json& x : *list) parts.push_back(&x);
  } else if (!n.is_null()) {
    parts.push_back(&n);
  }
  bool prepend = false, replace = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Json& p = *parts[i];
    const std::string type = string_member(p, "type");
    if (type == "Prepend" && i == 0 && string_member(p, "prepend") == kSpace) {
      prepend = true;
      continue;
    }
    const Json* pattern = member(p, "pattern");
    if (type == "Replace" && !replace && pattern != nullptr && string_member(*pattern, "String") == " " &&
        string_member(p, "content") == kSpace) {
      replace = true;
      continue;
    }
    return unsupported(
        f, "normalizer",
        fmt::format("'{}' is not SentencePiece's (Prepend \"\u2581\", Replace \" \" -> \"\u2581\")", type));
  }
  if (!replace)
    return unsupported(f, "normalizer",
                       "a byte_fallback BPE without the Replace \" \" -> \"\u2581\" normalizer is not "
                       "SentencePiece-style (llama.cpp's \"llama\" tokenizer)");
  return prepend;
}

// GGUF "llama" merges by score: the token rank r makes scores -r; tokens no merge makes never win.
std::vector<float> merge_scores(const tokenizer::Vocab& v, size_t n) {
  std::unordered_map<std::string, size_t> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids.emplace(v.tokens[i], i);
  std::vector<float> scores(n, -1e9f);
  std::vector<bool> set(n, false);
  for (size_t r = 0; r < v.merges.size(); ++r) {
    const auto [left, right] = v.merges[r];
    std::string merged(left);
    merged += right;
    const auto it = ids.find(merged);
    if (it == ids.end() || set[it->second]) continue;
    scores[it->second] = -static_cast<float>(r);
    set[it->second] = true;
  }
  return scores;
}

// "a b", a space inside a piece written as U+0120 (convert_hf_to_gguf.py's encoding).
std::string merge_line(tokenizer::MergeList::Merge m) {
  auto piece = [](std::string_view s) {
    std::string out;
    for (char c : s) out += c == ' ' ? std::string("\xC4\xA0") : std::string(1, c);
    return out;
  };
  return piece(m.first) + " " + piece(m.second);
}

bool is_placeholder(std::string_view text) { return text.starts_with("\x01glass-undefined-"); }

Status chat_template(const HfTokenizerFiles& f, const Json& config, GgufMetadataBuilder& m) {
  if (!f.chat_template_jinja.empty()) {
    m.string("tokenizer.chat_template", f.chat_template_jinja);
    return {};
  }
  const Json* t = member(config, "chat_template");
  if (t == nullptr) return {};
  if (t->is_string()) {
    m.string("tokenizer.chat_template", t->get<std::string>());
    return {};
  }
  if (t->is_array()) {
    for (const Json& entry : *t) {
      const std::string name = string_member(entry, "name");
      const Json* text = member(entry, "template");
      if (name.empty() || text == nullptr || !text->is_string())
        return make_error(
            ErrorCode::InvalidFile,
            fmt::format("hf to gguf: tokenizer_config.json (beside {}): chat_template: an entry "
                        "without a name or template string",
                        f.where));
      m.string(name == "default" ? std::string("tokenizer.chat_template") : "tokenizer.chat_template." + name,
               text->get<std::string>());
    }
    return {};
  }
  return make_error(ErrorCode::InvalidFile,
                    fmt::format("hf to gguf: tokenizer_config.json (beside {}): chat_template is neither a "
                                "string nor a list",
                                f.where));
}

// Bounded and regular files only (core/read_file.h).
Result<std::string> read_text(const std::filesystem::path& p) {
  return read_file_bounded(p, kMaxTextFileBytes, "hf to gguf");
}

}  // namespace

Result<HfTokenizerFiles> read_hf_tokenizer_files(const std::filesystem::path& dir) {
  HfTokenizerFiles f;
  std::error_code ec;
  f.where = (dir / "tokenizer.json").string();
  if (!std::filesystem::is_regular_file(dir / "tokenizer.json", ec))
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("hf to gguf: {} is missing (glass converts tokenizers from tokenizer.json "
                                  "only, not tokenizer.model)",
                                  f.where));
  auto tok = read_text(dir / "tokenizer.json");
  if (!tok) return tok.error();
  f.tokenizer_json = std::move(*tok);
  for (auto [name, text] : {std::pair{"tokenizer_config.json", &f.config_json},
                            std::pair{"chat_template.jinja", &f.chat_template_jinja}}) {
    if (!std::filesystem::is_regular_file(dir / name, ec)) continue;
    auto t = read_text(dir / name);
    if (!t) return t.error();
    *text = std::move(*t);
  }
  return f;
}

Status hf_tokenizer_to_gguf(const HfTokenizerFiles& f, int64_t n_vocab, GgufMetadataBuilder& m) {
  // tokenizer.json: a vocabulary object of short keys costs ~10 times its text parsed.
  auto json = parse_json_strict(f.tokenizer_json, f.where, /*memory_factor=*/16);
  if (!json) return json.error();
  Json config = Json::object();
  if (!f.config_json.empty()) {
    auto c = parse_json_strict(f.config_json, "tokenizer_config.json", /*memory_factor=*/16);
    if (!c) return c.error();
    config = std::move(*c);
  }
  const Json null_json;
  const Json* model = member(*json, "model");
  if (model == nullptr || string_member(*model, "type") != "BPE")
    return unsupported(f, "model.type",
                       fmt::format("'{}' (glass converts BPE tokenizers only)",
                                   model == nullptr ? std::string() : string_member(*model, "type")));
  const Json* normalizer = member(*json, "normalizer");
  const Json* pre_tokenizer = member(*json, "pre_tokenizer");

  // The tokenizer glass runs for this directory: ids, types, BOS/EOS and their addition.
  auto tok = tokenizer::hf_tokenizer_from_json(f.tokenizer_json, f.config_json);
  if (!tok) return make_error(tok.error().code, fmt::format("{} ({})", tok.error().message, f.where));
  const tokenizer::Vocab& v = tok->vocab();
  const size_t n = n_vocab > 0 ? static_cast<size_t>(n_vocab) : v.tokens.size();
  if (v.tokens.size() > n)
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("hf to gguf: {} defines {} tokens but the model's vocabulary has {} rows",
                                  f.where, v.tokens.size(), n));
  std::vector<std::string> tokens(n);
  std::vector<int32_t> types(n, static_cast<int32_t>(TokenType::Unused));
  for (size_t i = 0; i < n; ++i) {
    if (i >= v.tokens.size() || is_placeholder(v.tokens[i])) {
      tokens[i] = fmt::format("[PAD{}]", i);
      continue;
    }
    tokens[i] = std::string(v.tokens[i]);
    types[i] = static_cast<int32_t>(v.types[i]);
  }

  const bool byte_fallback = bool_member(*model, "byte_fallback", false);
  if (byte_fallback) {
    if (pre_tokenizer != nullptr)
      return unsupported(f, "pre_tokenizer",
                         fmt::format("'{}' with a byte_fallback BPE (SentencePiece-style tokenizers convert "
                                     "with a normalizer and no pre-tokenizer)",
                                     string_member(*pre_tokenizer, "type")));
    auto prefix = spm_normalizer(f, normalizer != nullptr ? *normalizer : null_json);
    if (!prefix) return prefix.error();
    if (v.unk_id >= 0) types[static_cast<size_t>(v.unk_id)] = static_cast<int32_t>(TokenType::Unknown);
    m.string("tokenizer.ggml.model", "llama");
    m.string("tokenizer.ggml.pre", "default");
    m.string_array("tokenizer.ggml.tokens", tokens);
    m.f32_array("tokenizer.ggml.scores", merge_scores(v, n));
    m.i32_array("tokenizer.ggml.token_type", types);
    m.boolean("tokenizer.ggml.add_space_prefix", *prefix);
  } else {
    if (normalizer != nullptr && string_member(*normalizer, "type") != "NFC")
      return unsupported(f, "normalizer",
                         fmt::format("'{}' with a byte-level BPE (llama.cpp applies none; NFC is accepted "
                                     "as convert_hf_to_gguf.py does)",
                                     string_member(*normalizer, "type")));
    auto pre = byte_level_pre(f, pre_tokenizer != nullptr ? *pre_tokenizer : null_json);
    if (!pre) return pre.error();
    std::vector<std::string> merges;
    merges.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) merges.push_back(merge_line(v.merges[i]));
    m.string("tokenizer.ggml.model", "gpt2");
    m.string("tokenizer.ggml.pre", *pre);
    m.string_array("tokenizer.ggml.tokens", tokens);
    m.i32_array("tokenizer.ggml.token_type", types);
    m.string_array("tokenizer.ggml.merges", merges);
  }
  for (auto [key, id] : {std::pair{"tokenizer.ggml.bos_token_id", v.bos_id},
                         std::pair{"tokenizer.ggml.eos_token_id", v.eos_id},
                         std::pair{"tokenizer.ggml.unknown_token_id", v.unk_id},
                         std::pair{"tokenizer.ggml.padding_token_id", v.pad_id}})
    if (id >= 0) m.u32(key, static_cast<uint32_t>(id));
  m.boolean("tokenizer.ggml.add_bos_token", v.add_bos);
  m.boolean("tokenizer.ggml.add_eos_token", v.add_eos);
  return chat_template(f, config, m);
}

}  // namespace glass::formats
