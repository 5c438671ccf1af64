#include "tokenizer/hf_json.h"

#include <fmt/format.h>

#include <limits>

#include "tokenizer/unicode.h"

namespace glass::tokenizer::hf {
namespace {

Error unsupported(std::string_view where, std::string_view type) {
  return make_error(ErrorCode::Unsupported,
                    fmt::format("tokenizer.json: {}: type '{}' is not supported", where, type));
}

Result<std::string> type_of(const Json& j, std::string_view where) {
  if (!j.is_object()) return bad(where, "expected an object");
  return get_string(j, "type", std::nullopt, where);
}

// A list member (`key`) of a Sequence.
Result<const Json*> list(const Json& j, std::string_view key, std::string_view where) {
  const Json* items = find(j, key);
  if (items == nullptr || !items->is_array()) return bad(where, fmt::format("'{}' must be a list", key));
  return items;
}

// {"String": s} or {"Regex": r} (HF ReplacePattern / SplitPattern).
struct Pattern {
  bool regex = false;
  std::string text;
};
Result<Pattern> pattern_of(const Json& j, std::string_view where) {
  const Json* p = find(j, "pattern");
  const std::string at = fmt::format("{}.pattern", where);
  if (p == nullptr || !p->is_object() || p->size() != 1)
    return bad(at, "expected {\"String\": ...} or {\"Regex\": ...}");
  const auto it = p->begin();
  if (!it.value().is_string() || (it.key() != "String" && it.key() != "Regex")) {
    return bad(at, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  return Pattern{it.key() == "Regex", it.value().get<std::string>()};
}

Result<SplitBehavior> behavior_of(const Json& j, std::string_view where, SplitBehavior fallback) {
  Result<std::string> b = get_string(j, "behavior", "", where);
  if (!b) return b.error();
  if (b->empty()) return fallback;
  for (auto [name, value] :
       {std::pair{"Removed", SplitBehavior::Removed}, std::pair{"Isolated", SplitBehavior::Isolated},
        std::pair{"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
        std::pair{"MergedWithNext", SplitBehavior::MergedWithNext},
        std::pair{"Contiguous", SplitBehavior::Contiguous}}) {
    if (*b == name) return value;
  }
  return bad(where, fmt::format("unknown split behavior '{}'", *b));
}

// One character, as Strip / Metaspace / CharDelimiterSplit want.
Result<std::string> one_char(const Json& j, std::string_view key, std::string fallback,
                             std::string_view where) {
  Result<std::string> s = get_string(j, key, std::move(fallback), where);
  if (!s) return s.error();
  if (s->empty() || unicode::decode(*s, 0).len != s->size()) {
    return bad(where, fmt::format("'{}' must be one character, got '{}'", key, *s));
  }
  return s;
}

Result<PrependScheme> prepend_scheme(const Json& j, std::string_view where) {
  Result<std::string> scheme = get_string(j, "prepend_scheme", "always", where);
  if (!scheme) return scheme.error();
  Result<bool> add_prefix_space = get_bool(j, "add_prefix_space", true, where);
  if (!add_prefix_space) return add_prefix_space.error();
  if (!*add_prefix_space) return PrependScheme::Never;  // legacy files
  if (*scheme == "always") return PrependScheme::Always;
  if (*scheme == "first") return PrependScheme::First;
  if (*scheme == "never") return PrependScheme::Never;
  return bad(where, fmt::format("unknown prepend_scheme '{}'", *scheme));
}

Status add_normalizer(const Json& j, std::string_view where, std::vector<NormalizerStep>& steps) {
  Result<std::string> type = type_of(j, where);
  if (!type) return type.error();
  const std::string& t = *type;
  if (t == "Sequence") {
    Result<const Json*> items = list(j, "normalizers", where);
    if (!items) return items.error();
    for (size_t i = 0; i < (*items)->size(); ++i) {
      if (Status s = add_normalizer((**items)[i], fmt::format("{}.normalizers[{}]", where, i), steps); !s)
        return s;
    }
  } else if (t == "NFC" || t == "NFD" || t == "NFKC" || t == "NFKD") {
    const unicode::Form form = t == "NFC"    ? unicode::Form::Nfc
                               : t == "NFD"  ? unicode::Form::Nfd
                               : t == "NFKC" ? unicode::Form::Nfkc
                                             : unicode::Form::Nfkd;
    steps.emplace_back(NormalizeForm{form});
  } else if (t == "Lowercase") {
    steps.emplace_back(Lowercase{});
  } else if (t == "StripAccents") {
    steps.emplace_back(StripAccents{});
  } else if (t == "Strip") {
    Result<bool> left = get_bool(j, "strip_left", true, where),
                 right = get_bool(j, "strip_right", true, where);
    if (!left) return left.error();
    if (!right) return right.error();
    steps.emplace_back(StripSpaces{*left, *right});
  } else if (t == "Prepend") {
    Result<std::string> p = get_string(j, "prepend", std::nullopt, where);
    if (!p) return p.error();
    steps.emplace_back(PrependText{std::move(p).value()});
  } else if (t == "Replace") {
    Result<Pattern> p = pattern_of(j, where);
    if (!p) return p.error();
    Result<std::string> content = get_string(j, "content", std::nullopt, where);
    if (!content) return content.error();
    if (p->regex) {
      Result<Regex> re = Regex::compile(p->text);
      if (!re) return bad(where, re.error().message);
      steps.emplace_back(ReplaceRegex{std::move(re).value(), std::move(content).value()});
    } else {
      steps.emplace_back(ReplaceText{p->text, std::move(content).value()});
    }
  } else if (t == "BertNormalizer") {
    BertNormalize b;
    Result<bool> clean = get_bool(j, "clean_text", true, where),
                 chinese = get_bool(j, "handle_chinese_chars", true, where),
                 lower = get_bool(j, "lowercase", true, where);
    if (!clean) return clean.error();
    if (!chinese) return chinese.error();
    if (!lower) return lower.error();
    b.clean_text = *clean;
    b.handle_chinese_chars = *chinese;
    b.lowercase = *lower;
    Result<bool> strip = get_bool(j, "strip_accents", b.lowercase, where);  // null: as lowercase
    if (!strip) return strip.error();
    b.strip_accents = *strip;
    steps.emplace_back(b);
  } else {
    return unsupported(where, t);  // Precompiled (SentencePiece charsmap), Nmt, ByteLevel, ...
  }
  return {};
}

Status add_pre_tokenizer(const Json& j, std::string_view where, std::vector<PreTokenizerStep>& steps) {
  Result<std::string> type = type_of(j, where);
  if (!type) return type.error();
  const std::string& t = *type;
  if (t == "Sequence") {
    Result<const Json*> items = list(j, "pretokenizers", where);
    if (!items) return items.error();
    for (size_t i = 0; i < (*items)->size(); ++i) {
      if (Status s = add_pre_tokenizer((**items)[i], fmt::format("{}.pretokenizers[{}]", where, i), steps);
          !s)
        return s;
    }
  } else if (t == "Split") {
    Result<Pattern> p = pattern_of(j, where);
    if (!p) return p.error();
    Result<Regex> re = p->regex ? Regex::compile(p->text) : Regex::literal(p->text);
    if (!re) return bad(where, re.error().message);
    Result<SplitBehavior> behavior = behavior_of(j, where, SplitBehavior::Isolated);
    if (!behavior) return behavior.error();
    Result<bool> invert = get_bool(j, "invert", false, where);
    if (!invert) return invert.error();
    steps.emplace_back(SplitRegex{std::move(re).value(), *behavior, *invert});
  } else if (t == "ByteLevel") {
    Result<bool> prefix = get_bool(j, "add_prefix_space", true, where),
                 use_regex = get_bool(j, "use_regex", true, where);
    if (!prefix) return prefix.error();
    if (!use_regex) return use_regex.error();
    Result<ByteLevelSplit> b = make_byte_level(*prefix, *use_regex);
    if (!b) return b.error();
    steps.emplace_back(std::move(b).value());
  } else if (t == "Metaspace") {
    Result<std::string> replacement = one_char(j, "replacement", "\xE2\x96\x81", where);
    if (!replacement) return replacement.error();
    Result<PrependScheme> scheme = prepend_scheme(j, where);
    if (!scheme) return scheme.error();
    Result<bool> split = get_bool(j, "split", true, where);
    if (!split) return split.error();
    steps.emplace_back(MetaspaceSplit{std::move(replacement).value(), *scheme, *split});
  } else if (t == "Whitespace" || t == "WhitespaceSplit") {
    steps.emplace_back(WhitespaceSplit{t == "WhitespaceSplit"});
  } else if (t == "Digits") {
    Result<bool> individual = get_bool(j, "individual_digits", false, where);
    if (!individual) return individual.error();
    steps.emplace_back(DigitsSplit{*individual});
  } else if (t == "Punctuation") {
    Result<SplitBehavior> behavior = behavior_of(j, where, SplitBehavior::Isolated);
    if (!behavior) return behavior.error();
    steps.emplace_back(PunctuationSplit{*behavior});
  } else if (t == "BertPreTokenizer") {
    steps.emplace_back(BertSplit{});
  } else if (t == "CharDelimiterSplit") {
    Result<std::string> d = one_char(j, "delimiter", std::string(), where);
    if (!d) return d.error();
    steps.emplace_back(CharDelimiterSplit{unicode::decode(*d, 0).cp});
  } else {
    return unsupported(where, t);  // UnicodeScripts, FixedLength, ...
  }
  return {};
}

Status add_decoder(const Json& j, std::string_view where, std::vector<DecoderStep>& steps) {
  Result<std::string> type = type_of(j, where);
  if (!type) return type.error();
  const std::string& t = *type;
  if (t == "Sequence") {
    Result<const Json*> items = list(j, "decoders", where);
    if (!items) return items.error();
    for (size_t i = 0; i < (*items)->size(); ++i) {
      if (Status s = add_decoder((**items)[i], fmt::format("{}.decoders[{}]", where, i), steps); !s) return s;
    }
  } else if (t == "ByteLevel") {
    steps.emplace_back(ByteLevelDecode{});
  } else if (t == "ByteFallback") {
    steps.emplace_back(ByteFallbackDecode{});
  } else if (t == "Fuse") {
    steps.emplace_back(FuseDecode{});
  } else if (t == "Strip") {
    Result<std::string> content = one_char(j, "content", " ", where);
    Result<int64_t> start = get_int(j, "start", 0, where), stop = get_int(j, "stop", 0, where);
    if (!content) return content.error();
    if (!start) return start.error();
    if (!stop) return stop.error();
    if (*start < 0 || *stop < 0) return bad(where, "start and stop must not be negative");
    steps.emplace_back(
        StripDecode{std::move(content).value(), static_cast<size_t>(*start), static_cast<size_t>(*stop)});
  } else if (t == "Replace") {
    Result<Pattern> p = pattern_of(j, where);
    if (!p) return p.error();
    if (p->regex)
      return make_error(ErrorCode::Unsupported, fmt::format("tokenizer.json: {}: a Regex pattern in a "
                                                            "Replace decoder is not supported",
                                                            where));
    Result<std::string> content = get_string(j, "content", std::nullopt, where);
    if (!content) return content.error();
    steps.emplace_back(ReplaceDecode{p->text, std::move(content).value()});
  } else if (t == "Metaspace") {
    Result<std::string> replacement = one_char(j, "replacement", "\xE2\x96\x81", where);
    if (!replacement) return replacement.error();
    Result<PrependScheme> scheme = prepend_scheme(j, where);
    if (!scheme) return scheme.error();
    steps.emplace_back(MetaspaceDecode{std::move(replacement).value(), *scheme != PrependScheme::Never});
  } else if (t == "WordPiece") {
    Result<std::string> prefix = get_string(j, "prefix", "##", where);
    Result<bool> cleanup = get_bool(j, "cleanup", true, where);
    if (!prefix) return prefix.error();
    if (!cleanup) return cleanup.error();
    steps.emplace_back(WordPieceDecode{std::move(prefix).value(), *cleanup});
  } else if (t == "BPEDecoder") {
    Result<std::string> suffix = get_string(j, "suffix", "</w>", where);
    if (!suffix) return suffix.error();
    steps.emplace_back(BpeSuffixDecode{std::move(suffix).value()});
  } else {
    return unsupported(where, t);  // CTC, ...
  }
  return {};
}

// A template piece: {"Sequence": {...}} / {"SpecialToken": {"id": name}} or the string form "$A", "[CLS]".
struct Piece {
  bool sequence = false;
  std::string name;
};
Result<Piece> piece_of(const Json& p, std::string_view where) {
  if (p.is_string()) {
    std::string s = p.get<std::string>();
    if (const size_t colon = s.rfind(':'); colon != std::string::npos && colon > 0) s.resize(colon);
    if (s.starts_with('$')) return Piece{true, s};
    return Piece{false, s};
  }
  if (p.is_object() && p.size() == 1) {
    const auto it = p.begin();
    if (it.key() == "Sequence") return Piece{true, ""};
    if (it.key() == "SpecialToken") {
      Result<std::string> id = get_string(it.value(), "id", std::nullopt, where);
      if (!id) return id.error();
      return Piece{false, std::move(id).value()};
    }
  }
  return bad(where, "expected a Sequence or SpecialToken piece");
}

Status add_post_processor(const Json& j, std::string_view where, Template& out) {
  Result<std::string> type = type_of(j, where);
  if (!type) return type.error();
  const std::string& t = *type;
  Template mine;
  if (t == "Sequence") {
    Result<const Json*> items = list(j, "processors", where);
    if (!items) return items.error();
    for (size_t i = 0; i < (*items)->size(); ++i) {
      if (Status s = add_post_processor((**items)[i], fmt::format("{}.processors[{}]", where, i), out); !s)
        return s;
    }
    return {};
  }
  if (t == "ByteLevel") return {};
  if (t == "RobertaProcessing" || t == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const Json* pair = find(j, key);
      if (pair == nullptr || !pair->is_array() || pair->size() != 2 || !(*pair)[1].is_number_integer()) {
        return bad(fmt::format("{}.{}", where, key), "expected [token, id]");
      }
      const auto id = (*pair)[1].get<int64_t>();
      if (id < 0 || id > std::numeric_limits<int32_t>::max())
        return bad(fmt::format("{}.{}", where, key), "id out of range");
      (key == std::string_view("cls") ? mine.prefix : mine.suffix).push_back(static_cast<int32_t>(id));
    }
  } else if (t == "TemplateProcessing") {
    Result<const Json*> single = list(j, "single", where);
    if (!single) return single.error();
    const Json* specials = find(j, "special_tokens");
    bool after = false;
    for (size_t i = 0; i < (*single)->size(); ++i) {
      const std::string at = fmt::format("{}.single[{}]", where, i);
      Result<Piece> piece = piece_of((**single)[i], at);
      if (!piece) return piece.error();
      if (piece->sequence) {
        after = true;
        continue;
      }
      const Json* special = specials == nullptr ? nullptr : find(*specials, piece->name);
      const Json* ids = special == nullptr ? nullptr : find(*special, "ids");
      if (ids == nullptr || !ids->is_array()) {
        return bad(at, fmt::format("special token '{}' is not in special_tokens", piece->name));
      }
      for (const Json& id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return bad(at, fmt::format("special token '{}' has a bad id", piece->name));
        }
        (after ? mine.suffix : mine.prefix).push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
    }
  } else {
    return unsupported(where, t);
  }
  // A later processor wraps what the earlier ones produced.
  out.prefix.insert(out.prefix.begin(), mine.prefix.begin(), mine.prefix.end());
  out.suffix.insert(out.suffix.end(), mine.suffix.begin(), mine.suffix.end());
  return {};
}

}  // namespace

Error bad(std::string_view where, std::string_view what) {
  return make_error(ErrorCode::InvalidFile, fmt::format("tokenizer.json: {}: {}", where, what));
}

const Json* find(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Result<bool> get_bool(const Json& obj, std::string_view key, bool fallback, std::string_view where) {
  const Json* v = find(obj, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return bad(where, fmt::format("'{}' must be true or false", key));
  return v->get<bool>();
}

Result<std::string> get_string(const Json& obj, std::string_view key, std::optional<std::string> fallback,
                               std::string_view where) {
  const Json* v = find(obj, key);
  if (v == nullptr) {
    if (fallback) return std::move(fallback).value();
    return bad(where, fmt::format("'{}' is missing", key));
  }
  if (!v->is_string()) return bad(where, fmt::format("'{}' must be a string", key));
  return v->get<std::string>();
}

Result<int64_t> get_int(const Json& obj, std::string_view key, std::optional<int64_t> fallback,
                        std::string_view where) {
  const Json* v = find(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return bad(where, fmt::format("'{}' is missing", key));
  }
  if (!v->is_number_integer()) return bad(where, fmt::format("'{}' must be an integer", key));
  return v->get<int64_t>();
}

Result<Normalizer> parse_normalizer(const Json& j, std::string_view where) {
  std::vector<NormalizerStep> steps;
  if (!j.is_null()) {
    if (Status s = add_normalizer(j, where, steps); !s) return s.error();
  }
  return Normalizer(std::move(steps));
}

Result<PreTokenizer> parse_pre_tokenizer(const Json& j, std::string_view where) {
  std::vector<PreTokenizerStep> steps;
  if (!j.is_null()) {
    if (Status s = add_pre_tokenizer(j, where, steps); !s) return s.error();
  }
  return PreTokenizer(std::move(steps));
}

Result<std::optional<Decoder>> parse_decoder(const Json& j, std::string_view where) {
  if (j.is_null()) return std::optional<Decoder>();
  std::vector<DecoderStep> steps;
  if (Status s = add_decoder(j, where, steps); !s) return s.error();
  return std::optional<Decoder>(Decoder(std::move(steps)));
}

Result<Template> parse_post_processor(const Json& j, std::string_view where) {
  Template t;
  if (!j.is_null()) {
    if (Status s = add_post_processor(j, where, t); !s) return s.error();
  }
  return t;
}

}  // namespace glass::tokenizer::hf
