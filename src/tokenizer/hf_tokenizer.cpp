#include "tokenizer/hf_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/huge_pages.h"
#include "core/json_bounded.h"
#include "core/read_file.h"
#include "tokenizer/hf_json.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/token_index.h"

namespace glass::tokenizer {
namespace {

using hf::bad;
using hf::Json;

// Regular files only, the size limit enforced while reading (core/read_file.h): the largest real
// tokenizer files are ~35 MB.
Result<std::string> read_file(const std::filesystem::path& path) {
  return read_file_bounded(path, kMaxTextFileBytes, "tokenizer");
}

// tokenizer_config.json (small: tokens, flags, a chat template).
Result<Json> parse_json(std::string_view text, std::string_view name) {
  return parse_json_bounded<Json>(text, name);
}

// Frees what `x` holds: `x = {}` keeps a vector's capacity, and a move-assignment from an empty
// value keeps a string's buffer (libstdc++ copies a short string into the buffer it has).
template <class T>
void release(T& x) {
  [[maybe_unused]] T gone = std::move(x);
}

// The model's vocabulary, ids checked: the keys as read, the earlier of repeated keys marked
// replaced (a DOM object holds the last), and an open-addressing table of the others for text -> id.
// Errors name the entry a DOM's iteration (sorted keys) meets first: the least key among the faulty
// ones. (Sorting 3M keys took 0.7 s of a hostile file's rejection; the table is linear.)
struct ModelVocabulary {
  using Keys = hf::TokenizerJson::VocabKeys;
  static constexpr int32_t kReplaced = -3;  // a later entry has the same key

  struct Slot {
    uint32_t entry = 0;  // entry + 1; 0: empty
    uint32_t tag = 0;    // the hash's high bits: most probes never read a key
  };

  Keys keys;
  std::vector<Slot> slots;  // at most 3/4 full
  size_t count = 0;         // keys that are not replaced
  int64_t max_id = -1;

  size_t size() const { return count; }
  std::string_view text(uint32_t i) const { return keys.texts[i]; }
  int32_t id(uint32_t i) const { return keys.ids[i]; }
  bool replaced(uint32_t i) const { return keys.ids[i] == kReplaced; }

  // The slot that holds `t` (whose hash is `h`), or the empty one where it would go (tagged for `t`).
  Slot& slot_of(std::string_view t) { return slot_of(t, TokenIndex::hash(t)); }
  Slot& slot_of(std::string_view t, uint64_t h) {
    const auto tag = static_cast<uint32_t>(h >> 32);
    const size_t mask = slots.size() - 1;
    size_t s = h & mask;
    while (slots[s].entry != 0 && (slots[s].tag != tag || text(slots[s].entry - 1) != t)) s = (s + 1) & mask;
    slots[s].tag = tag;
    return slots[s];
  }
  // The id of `text`, or -1.
  int32_t find(std::string_view t) {
    if (slots.empty()) return -1;
    const uint32_t e = slot_of(t).entry;
    return e == 0 ? -1 : id(e - 1);
  }
};

Result<ModelVocabulary> read_vocab(hf::TokenizerJson& tj) {
  using Keys = ModelVocabulary::Keys;
  if (!tj.vocab_is_object) return bad("model.vocab", "missing or not an object");
  if (tj.vocab_error) return *tj.vocab_error;
  ModelVocabulary v;
  v.keys = std::move(tj.vocab);
  size_t capacity = 16;
  while (capacity * 3 < 4 * v.keys.size()) capacity *= 2;
  reserve_huge(v.slots, capacity);
  v.slots.assign(capacity, ModelVocabulary::Slot{});
  std::optional<uint32_t> faulty;  // the least key whose value is not an id
  const auto n = static_cast<uint32_t>(v.keys.size());
  HashesAhead hashes(
      n, [&](size_t e) { return v.text(static_cast<uint32_t>(e)); }, v.slots.data(), capacity - 1);
  for (uint32_t e = 0; e < n; ++e) {
    const uint64_t h = hashes.next(e);
    ModelVocabulary::Slot& slot = v.slot_of(v.text(e), h);
    if (slot.entry != 0) {
      v.keys.ids[slot.entry - 1] = ModelVocabulary::kReplaced;
      --v.count;
    }
    slot.entry = e + 1;
    ++v.count;
  }
  for (uint32_t e = 0; e < v.keys.size(); ++e) {
    if (v.replaced(e)) continue;
    if (v.id(e) < 0) {
      if (!faulty || v.text(e) < v.text(*faulty)) faulty = e;
      continue;
    }
    v.max_id = std::max<int64_t>(v.max_id, v.id(e));
  }
  if (faulty && v.id(*faulty) == Keys::kNotAnInteger)
    return bad("model.vocab", fmt::format("'{}': the id is not an integer", v.text(*faulty)));
  if (faulty) {
    return bad("model.vocab", fmt::format("'{}': id {} is out of range", v.text(*faulty),
                                          v.keys.out_of_range_value(*faulty)));
  }
  release(v.keys.out_of_range);
  return v;
}

Result<MergeList> read_merges(hf::TokenizerJson& tj) {
  if (!tj.merges_present || !tj.merges_is_array)
    return bad("model.merges", "missing or not a list (a BPE model needs its merges)");
  if (tj.merges_error) return *tj.merges_error;
  return std::move(tj.merges);
}

// A token named by tokenizer_config.json: a string, {"content": ...} (AddedToken) or null.
std::string config_token(const Json& config, std::string_view key) {
  const Json* v = hf::find(config, key);
  if (v == nullptr) return {};
  if (v->is_string()) return v->get<std::string>();
  if (v->is_object()) {
    if (const Json* c = hf::find(*v, "content"); c != nullptr && c->is_string()) return c->get<std::string>();
  }
  return {};
}

Result<Tokenizer> build(hf::TokenizerJson& tj, const Json& config, const HfTokenizerOptions& options) {
  const Json& j = tj.rest;
  if (!j.is_object()) return bad("(top level)", "expected an object");
  const Json* model = hf::find(j, "model");
  if (model == nullptr || !model->is_object()) return bad("model", "missing");
  Result<std::string> model_type = hf::get_string(*model, "type", "", "model");
  if (!model_type) return model_type.error();
  std::string type = std::move(model_type).value();
  if (type.empty()) type = tj.merges_present ? "BPE" : "WordPiece";  // HF's untagged form
  if (type != "BPE" && type != "WordPiece") {
    return make_error(ErrorCode::Unsupported,
                      fmt::format("tokenizer.json: model: type '{}' is not supported", type));
  }

  Result<ModelVocabulary> mv = read_vocab(tj);
  if (!mv) return mv.error();
  Vocab v;
  v.model = type;
  Pipeline p;
  p.flavor = Flavor::HuggingFace;
  if (type == "BPE") {
    Result<MergeList> merges = read_merges(tj);
    if (!merges) return merges.error();
    v.merges = std::move(merges).value();
    p.model = ModelKind::Bpe;
    if (const Json* dropout = hf::find(*model, "dropout");
        dropout && (!dropout->is_number() || dropout->get<double>() != 0.0)) {
      return make_error(ErrorCode::Unsupported,
                        "tokenizer.json: model.dropout: BPE dropout (random merges) is not supported");
    }
    for (auto [key, flag] :
         {std::pair{"byte_fallback", &p.bpe.byte_fallback}, std::pair{"fuse_unk", &p.bpe.fuse_unk},
          std::pair{"ignore_merges", &p.bpe.ignore_merges}}) {
      Result<bool> b = hf::get_bool(*model, key, false, "model");
      if (!b) return b.error();
      *flag = *b;
    }
    for (auto [key, text] : {std::pair{"continuing_subword_prefix", &p.bpe.continuing_subword_prefix},
                             std::pair{"end_of_word_suffix", &p.bpe.end_of_word_suffix}}) {
      Result<std::string> s = hf::get_string(*model, key, "", "model");
      if (!s) return s.error();
      *text = std::move(s).value();
    }
  } else {
    p.model = ModelKind::WordPiece;
    Result<std::string> prefix = hf::get_string(*model, "continuing_subword_prefix", "##", "model");
    Result<int64_t> max_chars = hf::get_int(*model, "max_input_chars_per_word", 100, "model");
    if (!prefix) return prefix.error();
    if (!max_chars) return max_chars.error();
    if (*max_chars < 0) return bad("model.max_input_chars_per_word", "must not be negative");
    p.wordpiece.prefix = std::move(prefix).value();
    p.wordpiece.max_input_chars_per_word = static_cast<size_t>(*max_chars);
  }
  Result<std::string> unk = hf::get_string(*model, "unk_token", type == "WordPiece" ? "[UNK]" : "", "model");
  if (!unk) return unk.error();

  // Added tokens take the model's id for their text, else the next free id (HF add_tokens).
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int32_t> added_ids;
  std::unordered_map<int32_t, size_t> entry_of_id;  // id -> its entry in `added`
  std::vector<bool> replaced;                       // per entry: a later one has its id
  if (tj.added_present) {
    if (!tj.added_is_array) return bad("added_tokens", "must be a list");
    auto next_id = static_cast<int64_t>(mv->size());
    for (size_t i = 0; i < tj.added.size(); ++i) {
      const Json& a = tj.added[i];
      const std::string where = fmt::format("added_tokens[{}]", i);
      AddedToken t;
      Result<std::string> content = hf::get_string(a, "content", std::nullopt, where);
      if (!content) return content.error();
      t.content = std::move(content).value();
      if (t.content.empty()) continue;
      for (auto [key, flag, fallback] :
           {std::tuple{"special", &t.special, false}, std::tuple{"lstrip", &t.lstrip, false},
            std::tuple{"rstrip", &t.rstrip, false}, std::tuple{"single_word", &t.single_word, false},
            std::tuple{"normalized", &t.normalized, true}}) {
        Result<bool> b = hf::get_bool(a, key, fallback, where);
        if (!b) return b.error();
        *flag = *b;
      }
      if (const auto it = added_ids.find(t.content); it != added_ids.end()) {
        t.id = it->second;
      } else if (const int32_t m = mv->find(t.content); m >= 0) {
        t.id = m;
        t.in_model_vocab = true;
      } else {
        t.id = static_cast<int32_t>(std::min<int64_t>(next_id++, std::numeric_limits<int32_t>::max() - 1));
      }
      added_ids[t.content] = t.id;
      // A later entry with the same id replaces the earlier one, and takes its place last (HF keeps
      // one token per id). Marked here and dropped once: erasing as they came was quadratic.
      if (const auto it = entry_of_id.find(t.id); it != entry_of_id.end()) replaced[it->second] = true;
      entry_of_id[t.id] = added.size();
      added.push_back(std::move(t));
      replaced.push_back(false);
    }
    size_t kept = 0;
    for (size_t i = 0; i < added.size(); ++i) {
      if (replaced[i]) continue;
      if (kept != i) added[kept] = std::move(added[i]);
      ++kept;
    }
    added.resize(kept);
  }

  // The tokens tokenizer_config.json and the model name, looked up while the model's table is held.
  auto id_of = [&](const std::string& text) -> int32_t {
    if (text.empty()) return -1;
    if (const auto it = added_ids.find(text); it != added_ids.end()) return it->second;
    return mv->find(text);
  };
  const int32_t unk_id = id_of(*unk);
  v.bos_id = id_of(config_token(config, "bos_token"));
  v.eos_id = id_of(config_token(config, "eos_token"));
  v.pad_id = id_of(config_token(config, "pad_token"));

  // The vocabulary: model tokens, then added ones; ids nobody defines stay as Unused placeholders.
  int64_t max_id = mv->max_id;
  for (const AddedToken& t : added) max_id = std::max<int64_t>(max_id, t.id);
  const int64_t n = max_id + 1;
  const auto defined = static_cast<int64_t>(mv->size() + added.size());
  if (n <= 0) return bad("model.vocab", "the vocabulary is empty");
  if (n > 2 * defined + 1024) {
    return bad("model.vocab",
               fmt::format("token id {} is out of range for a vocabulary of {} tokens", max_id, defined));
  }
  // The texts by id (the JSON lists them in any order): model tokens, then added ones over them. Two
  // keys with one id are named as a DOM's sorted iteration meets them: the least key that is not its
  // id's least, and its id's least.
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> model_entry(static_cast<size_t>(n), kNone);  // id -> its least key
  bool shared_id = false;
  for (uint32_t e = 0; e < mv->keys.size(); ++e) {
    if (mv->replaced(e)) continue;
    uint32_t& slot = model_entry[static_cast<size_t>(mv->id(e))];
    shared_id = shared_id || slot != kNone;
    if (slot == kNone || mv->text(e) < mv->text(slot)) slot = e;
  }
  if (shared_id) {
    std::optional<uint32_t> second;
    for (uint32_t e = 0; e < mv->keys.size(); ++e) {
      if (mv->replaced(e) || model_entry[static_cast<size_t>(mv->id(e))] == e) continue;
      if (!second || mv->text(e) < mv->text(*second)) second = e;
    }
    const uint32_t first = model_entry[static_cast<size_t>(mv->id(*second))];
    return bad("model.vocab", fmt::format("'{}' and '{}' have the same id {}", mv->text(first),
                                          mv->text(*second), mv->id(*second)));
  }
  release(mv->slots);  // only the texts are read from here on
  release(mv->keys.ids);
  std::vector<uint32_t> added_by_id(added.size());  // indices into `added` (one per id), by id
  size_t bytes = mv->keys.texts.bytes();
  for (uint32_t a = 0; a < added.size(); ++a) {
    const AddedToken& t = added[a];
    const auto i = static_cast<size_t>(t.id);
    if (!t.in_model_vocab && model_entry[i] != kNone && mv->text(model_entry[i]) != t.content) {
      return bad("added_tokens", fmt::format("'{}' has id {}, which the model's vocabulary gives to '{}'",
                                             t.content, t.id, mv->text(model_entry[i])));
    }
    added_by_id[a] = a;
    bytes += t.content.size();
  }
  std::sort(added_by_id.begin(), added_by_id.end(),
            [&](uint32_t a, uint32_t b) { return added[a].id < added[b].id; });
  size_t next_added = 0;
  reserve_huge(v.types, static_cast<size_t>(n));
  reserve_huge(v.scores, static_cast<size_t>(n));
  v.types.assign(static_cast<size_t>(n), TokenType::Unused);
  v.scores.assign(static_cast<size_t>(n), 0.0f);
  v.tokens.reserve(static_cast<size_t>(n), bytes);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    std::string undefined;
    std::string_view text;
    if (next_added < added_by_id.size() && static_cast<size_t>(added[added_by_id[next_added]].id) == i) {
      const AddedToken& t = added[added_by_id[next_added++]];
      text = t.content;
      v.types[i] = t.special ? TokenType::Control : TokenType::UserDefined;
    } else if (model_entry[i] != kNone) {
      text = mv->text(model_entry[i]);
      const bool byte =
          p.bpe.byte_fallback && text.size() == 6 && text.starts_with("<0x") && text.back() == '>';
      v.types[i] = byte ? TokenType::Byte : TokenType::Normal;
    }
    if (text.empty()) {  // an id nobody defines (or an empty key): a placeholder no text can match
      undefined = fmt::format("\x01glass-undefined-{}\x01", i);
      text = undefined;
    }
    if (!v.tokens.add(text))
      return bad("model.vocab", fmt::format("the texts take more than {} bytes", TokenTexts::kMaxBytes));
  }
  release(model_entry);
  release(*mv);  // not held while the tokenizer builds
  if (!unk->empty()) {
    v.unk_id = unk_id;
    if (v.unk_id < 0) return bad("model.unk_token", fmt::format("'{}' is not in the vocabulary", *unk));
  }
  p.bpe.unk_id = p.wordpiece.unk_id = v.unk_id;
  p.added_tokens = std::move(added);

  // Pipeline sections.
  const Json null_json;
  auto section = [&](const char* key) -> const Json& {
    const Json* s = hf::find(j, key);
    return s == nullptr ? null_json : *s;
  };
  Result<Normalizer> normalizer = hf::parse_normalizer(section("normalizer"));
  if (!normalizer) return normalizer.error();
  p.normalizer = std::move(normalizer).value();
  Result<PreTokenizer> pre = hf::parse_pre_tokenizer(section("pre_tokenizer"));
  if (!pre) return pre.error();
  p.pre_tokenizer = std::move(pre).value();
  Result<std::optional<Decoder>> decoder = hf::parse_decoder(section("decoder"));
  if (!decoder) return decoder.error();
  p.decoder = std::move(decoder).value();
  Result<hf::Template> post = hf::parse_post_processor(section("post_processor"));
  if (!post) return post.error();
  p.prefix = std::move(post->prefix);
  p.suffix = std::move(post->suffix);

  // tokenizer_config.json: BOS / EOS, their addition, clean-up.
  for (auto [key, ids, id] :
       {std::tuple{"add_bos_token", &p.prefix, v.bos_id}, std::tuple{"add_eos_token", &p.suffix, v.eos_id}}) {
    Result<bool> add = hf::get_bool(config, key, false, "tokenizer_config.json");
    if (!add) return add.error();
    if (hf::find(config, key) == nullptr) continue;
    ids->clear();
    if (*add && id >= 0) ids->push_back(id);
  }
  v.add_bos = !p.prefix.empty() && p.prefix.front() == v.bos_id;
  v.add_eos = !p.suffix.empty() && p.suffix.back() == v.eos_id;
  v.add_space_prefix = false;
  Result<bool> clean = hf::get_bool(config, "clean_up_tokenization_spaces", false, "tokenizer_config.json");
  if (!clean) return clean.error();
  p.clean_up = *clean ? CleanUp::Transformers : CleanUp::None;
  apply_special_token_rules(v, SpecialTokenIds{});
  v.eog_ids.insert(v.eog_ids.end(), options.eog_ids.begin(), options.eog_ids.end());
  std::sort(v.eog_ids.begin(), v.eog_ids.end());
  v.eog_ids.erase(std::unique(v.eog_ids.begin(), v.eog_ids.end()), v.eog_ids.end());
  return Tokenizer::create(std::move(v), std::move(p));
}

// `owned_text`, when given, holds tokenizer_json's bytes and is released once they are read.
Result<Tokenizer> from_json(std::string_view tokenizer_json, std::string* owned_text,
                            std::string_view config_json, const HfTokenizerOptions& options) {
  // The vocabulary, merges and added tokens as lists, the rest as a DOM (hf_tokenizer_json.h).
  Result<hf::TokenizerJson> j = hf::read_tokenizer_json(tokenizer_json, "tokenizer.json");
  if (owned_text != nullptr) std::string().swap(*owned_text);
  if (!j) return j.error();
  Json config = Json::object();
  if (!config_json.empty()) {
    Result<Json> c = parse_json(config_json, "tokenizer_config.json");
    if (!c) return c.error();
    if (!c->is_object())
      return make_error(ErrorCode::InvalidFile, "tokenizer_config.json: expected an object");
    config = std::move(c).value();
  }
  try {
    return build(*j, config, options);
  } catch (const Json::exception& e) {  // a type mismatch the checks above did not foresee
    return make_error(ErrorCode::InvalidFile, fmt::format("tokenizer.json: {}", e.what()));
  }
}

}  // namespace

Result<Tokenizer> hf_tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                         const HfTokenizerOptions& options) {
  return from_json(tokenizer_json, nullptr, config_json, options);
}

Result<Tokenizer> load_hf_tokenizer(const std::filesystem::path& path, const HfTokenizerOptions& options) {
  std::error_code ec;
  const bool dir = std::filesystem::is_directory(path, ec);
  const std::filesystem::path file = dir ? path / "tokenizer.json" : path;
  Result<std::string> text = read_file(file);
  if (!text) return text.error();
  std::string config;
  const std::filesystem::path config_path = file.parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path, ec)) {
    Result<std::string> c = read_file(config_path);
    if (!c) return c.error();
    config = std::move(c).value();
  }
  const std::string_view json = *text;
  Result<Tokenizer> t = from_json(json, &*text, config, options);
  if (!t) return make_error(t.error().code, fmt::format("{} ({})", t.error().message, file.string()));
  return t;
}

}  // namespace glass::tokenizer
