#include "tokenizer/hf_tokenizer_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "core/huge_pages.h"
#include "core/json_sax.h"
#include "glass/files.h"  // kMaxJsonDepth

namespace glass::tokenizer::hf {
namespace {

// What an open container is to the reader.
enum class Role : uint8_t {
  Dom,        // kept whole (normalizer, pre_tokenizer, decoder, post_processor, and what they hold)
  Root,       // the top-level object
  Model,      // the top-level "model" object
  AddedItem,  // one object of added_tokens
  Skip,       // not kept: read and dropped
  Vocab,      // model.vocab
  Merges,     // model.merges
  MergePair,  // one ["a", "b"] entry of model.merges
  Added,      // added_tokens
};

// What the next value is to the reader, from its container and key.
enum class Slot : uint8_t {
  Dom,
  Leaf,
  Skip,
  Root,
  Model,
  Vocab,
  Merges,
  Added,
  VocabId,
  Merge,
  MergePart,
  AddedItem
};

// The DOM's cost as nlohmann lays it out, roughly (formats/json_strict.cpp estimates the same way).
constexpr uint64_t kValueBytes = sizeof(Json);
constexpr uint64_t kMemberBytes = 96;
constexpr uint64_t kContainerBytes = 48;
constexpr uint64_t kBaseBudget = uint64_t{16} << 20;

constexpr std::array<std::string_view, 4> kSections = {"normalizer", "pre_tokenizer", "decoder",
                                                       "post_processor"};
constexpr std::array<std::string_view, 9> kModelFields = {"type",
                                                          "dropout",
                                                          "byte_fallback",
                                                          "fuse_unk",
                                                          "ignore_merges",
                                                          "continuing_subword_prefix",
                                                          "end_of_word_suffix",
                                                          "max_input_chars_per_word",
                                                          "unk_token"};
constexpr std::array<std::string_view, 6> kAddedFields = {"content", "special",     "lstrip",
                                                          "rstrip",  "single_word", "normalized"};

// Room for the short strings `unread` bytes of JSON text can hold at most: an entry of the
// vocabulary ("key": id,) or of the merges ("a b",) takes ~12 bytes or more, its text half of them.
// A list that turns out longer grows past it as a vector does.
struct Room {
  size_t entries, text_bytes;
};
constexpr Room room_in(size_t unread) { return {unread / 12, unread / 2}; }

template <size_t N>
bool one_of(const std::array<std::string_view, N>& names, std::string_view s) {
  for (std::string_view n : names)
    if (n == s) return true;
  return false;
}

class Reader {
 public:
  using Keys = TokenizerJson::VocabKeys;

  Reader(TokenizerJson& out, uint64_t budget, size_t text_bytes)
      : out_(out), budget_(budget), text_bytes_(text_bytes) {}

  // The events of core/json_sax.h.
  bool null() { return scalar(Json(nullptr)); }
  bool boolean(bool v) { return scalar(Json(v)); }
  bool number_integer(int64_t v) {  // negative: never an id
    if (next_slot() == Slot::VocabId) return vocab_entry(Keys::kOutOfRange, std::to_string(v));
    return scalar(Json(v));
  }
  bool number_unsigned(uint64_t v) {
    if (next_slot() == Slot::VocabId) {  // the common case, without a Json
      if (v < uint64_t{std::numeric_limits<int32_t>::max()}) return vocab_entry(static_cast<int32_t>(v));
      return vocab_entry(Keys::kOutOfRange, std::to_string(v));
    }
    return scalar(Json(v));
  }
  bool number_float(double v) { return scalar(Json(v)); }
  bool string(std::string& v) {
    const Slot s = next_slot();
    if (s == Slot::VocabId) return vocab_entry(Keys::kNotAnInteger);
    if (s == Slot::Merge) return merge_line(v);
    if (s == Slot::MergePart) return merge_part(&v);
    return scalar_in(s, Json(std::move(v)));
  }

  bool start_object() { return open(true); }
  bool start_array() { return open(false); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& k) {
    key_.swap(k);  // the parser's buffer keeps this one's room for the next string
    return true;
  }

  bool over_budget() const { return over_budget_; }

 private:
  struct Frame {
    Role role;
    Json* dom = nullptr;   // the container filled (Dom, Root, Model, AddedItem)
    size_t index = 0;      // Merges: the next entry's index; MergePair: parts seen
    bool bad = false;      // MergePair: a part that is not a string
    std::string parts[2];  // MergePair
  };

  // The slot of the value that comes next: its container's role and, in objects, its key.
  Slot next_slot() const {
    if (stack_.empty()) return Slot::Root;
    const Frame& f = stack_.back();
    switch (f.role) {
      case Role::Dom:
        return Slot::Dom;
      case Role::Root:
        if (key_ == "model") return Slot::Model;
        if (key_ == "added_tokens") return Slot::Added;
        return one_of(kSections, key_) ? Slot::Dom : Slot::Skip;
      case Role::Model:
        if (key_ == "vocab") return Slot::Vocab;
        if (key_ == "merges") return Slot::Merges;
        return one_of(kModelFields, key_) ? Slot::Leaf : Slot::Skip;
      case Role::AddedItem:
        return one_of(kAddedFields, key_) ? Slot::Leaf : Slot::Skip;
      case Role::Skip:
        return Slot::Skip;
      case Role::Vocab:
        return Slot::VocabId;
      case Role::Merges:
        return Slot::Merge;
      case Role::MergePair:
        return Slot::MergePart;
      case Role::Added:
        return Slot::AddedItem;
    }
    return Slot::Skip;
  }

  static constexpr size_t kMergesBeforeReserve = size_t{1} << 16;

  // At most the bytes of text not yet read into the vocabulary or the merges (each entry's text
  // and its least punctuation: "k":0, and "a b",), which the other can still hold.
  size_t unread_bytes() const {
    const size_t read =
        out_.vocab.texts.bytes() + 5 * out_.vocab.size() + out_.merges.bytes() + 4 * out_.merges.size();
    return text_bytes_ > read ? text_bytes_ - read : 0;
  }

  bool spend(uint64_t bytes) {
    spent_ += bytes;
    if (spent_ <= budget_) return true;
    over_budget_ = true;
    return false;
  }

  // Stores `v` in the container on top (Dom, Root, Model, AddedItem) or as the top-level value.
  Json* put(Json v) {
    if (stack_.empty()) {
      out_.rest = std::move(v);
      return &out_.rest;
    }
    Json& c = *stack_.back().dom;
    if (c.is_array()) {
      c.push_back(std::move(v));
      return &c.back();
    }
    Json& slot = c[key_];
    slot = std::move(v);
    return &slot;
  }

  Json* kept(Json v) {
    const uint64_t extra = v.is_string()       ? v.get_ref<const std::string&>().size()
                           : v.is_structured() ? kContainerBytes
                                               : 0;
    const bool member = !stack_.empty() && stack_.back().dom->is_object();
    if (!spend(kValueBytes + extra + (member ? kMemberBytes + key_.size() : 0))) return nullptr;
    return put(std::move(v));
  }

  void reset_vocab() {
    out_.vocab_is_object = false;
    out_.vocab.clear();
    out_.vocab_error.reset();
  }
  void reset_merges() {
    out_.merges_present = out_.merges_is_array = false;
    out_.merges.clear();
    out_.merges_error.reset();
  }
  void reset_added() {
    out_.added_present = out_.added_is_array = false;
    out_.added.clear();
  }

  bool scalar(Json v) {
    const Slot s = next_slot();
    if (s == Slot::VocabId) return vocab_entry(Keys::kNotAnInteger);  // integers come as numbers
    if (s == Slot::Merge) return merge_bad();
    if (s == Slot::MergePart) return merge_part(nullptr);
    return scalar_in(s, std::move(v));
  }

  bool scalar_in(Slot s, Json v) {
    switch (s) {
      case Slot::Dom:
      case Slot::Leaf:
      case Slot::Root:
        return kept(std::move(v)) != nullptr;
      case Slot::Model:
        reset_vocab();
        reset_merges();
        return kept(std::move(v)) != nullptr;
      case Slot::Vocab:
        reset_vocab();
        return true;
      case Slot::Merges:
        reset_merges();
        out_.merges_present = !v.is_null();
        return true;
      case Slot::Added:
        reset_added();
        out_.added_present = !v.is_null();
        return true;
      case Slot::AddedItem:
        if (!spend(kValueBytes)) return false;
        out_.added.push_back(std::move(v));
        return true;
      default:  // Skip (VocabId, Merge and MergePart are handled by the callers)
        return true;
    }
  }

  bool vocab_entry(int32_t id, std::string out_of_range_value = {}) {
    if (!out_.vocab_error && !out_.vocab.add(key_, id, std::move(out_of_range_value)))
      out_.vocab_error =
          bad("model.vocab", fmt::format("the keys take more than {} bytes", TokenTexts::kMaxBytes));
    key_.clear();
    return true;
  }

  // One entry of model.merges, as read_merges read a DOM's: "a b" (one space), "#version..." lines
  // skipped, or ["a", "b"]; the first other entry is the error.
  bool merge_line(const std::string& line) {
    Frame& f = stack_.back();
    const size_t i = f.index++;
    if (out_.merges_error || line.starts_with("#version")) return true;
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
      out_.merges_error = bad(fmt::format("model.merges[{}]", i),
                              fmt::format("'{}' is not two tokens separated by a space", line));
      return true;
    }
    const std::string_view l(line);
    return add_merge(i, l.substr(0, space), l.substr(space + 1));
  }
  bool add_merge(size_t i, std::string_view left, std::string_view right) {
    // Once the list shows it is long, room for what the rest of the text can hold, as the
    // vocabulary's keys get.
    if (out_.merges.size() == kMergesBeforeReserve) {
      const Room room = room_in(unread_bytes());
      out_.merges.reserve(kMergesBeforeReserve + room.entries,
                          std::min(out_.merges.bytes() + room.text_bytes, MergeList::kMaxBytes));
    }
    if (!out_.merges.add(left, right))
      out_.merges_error = bad(fmt::format("model.merges[{}]", i),
                              fmt::format("the merges take more than {} bytes", MergeList::kMaxBytes));
    return true;
  }
  bool merge_bad() {
    Frame& f = stack_.back();
    const size_t i = f.index++;
    if (!out_.merges_error)
      out_.merges_error = bad(fmt::format("model.merges[{}]", i), "expected \"a b\" or [\"a\", \"b\"]");
    return true;
  }
  bool merge_part(std::string* s) {
    Frame& f = stack_.back();
    if (s == nullptr || f.index >= 2)
      f.bad = true;
    else
      f.parts[f.index] = std::move(*s);
    ++f.index;
    return true;
  }

  bool open(bool object) {
    const Slot s = next_slot();
    Frame f{Role::Skip};
    switch (s) {
      case Slot::Dom:
        f.role = Role::Dom;
        if (!(f.dom = kept(object ? Json::object() : Json::array()))) return false;
        break;
      case Slot::Root:  // an array at the top is an error the loader reports: kept empty
        if (!(f.dom = kept(object ? Json::object() : Json::array()))) return false;
        if (object) f.role = Role::Root;
        break;
      case Slot::Leaf:  // the type is what a reader checks: an empty container of the same type
        if (!kept(object ? Json::object() : Json::array())) return false;
        break;
      case Slot::Model:
        reset_vocab();
        reset_merges();
        if (!(f.dom = kept(object ? Json::object() : Json::array()))) return false;
        if (object) f.role = Role::Model;
        break;
      case Slot::Vocab:
        reset_vocab();
        out_.vocab_is_object = object;
        if (object) {
          f.role = Role::Vocab;
          out_.vocab.reserve_for(unread_bytes());
        }
        break;
      case Slot::Merges:
        reset_merges();
        out_.merges_present = true;
        out_.merges_is_array = !object;
        if (!object) f.role = Role::Merges;
        break;
      case Slot::Added:
        reset_added();
        out_.added_present = true;
        out_.added_is_array = !object;
        if (!object) f.role = Role::Added;
        break;
      case Slot::VocabId:
        vocab_entry(Keys::kNotAnInteger);
        break;
      case Slot::Merge:
        if (object) {
          merge_bad();
        } else {
          ++stack_.back().index;
          f.role = Role::MergePair;
        }
        break;
      case Slot::MergePart:
        merge_part(nullptr);
        break;
      case Slot::AddedItem:
        if (!spend(kValueBytes + kContainerBytes)) return false;
        out_.added.push_back(object ? Json::object() : Json::array());
        if (object) {
          f.role = Role::AddedItem;
          f.dom = &out_.added.back();  // nothing is added to the list until this entry closes
        }
        break;
      case Slot::Skip:
        break;
    }
    stack_.push_back(std::move(f));
    return true;
  }

  bool close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.role == Role::MergePair) {
      const size_t i = stack_.back().index - 1;
      if (out_.merges_error) return true;
      if (f.bad || f.index != 2) {
        out_.merges_error = bad(fmt::format("model.merges[{}]", i), "expected \"a b\" or [\"a\", \"b\"]");
        return true;
      }
      return add_merge(i, f.parts[0], f.parts[1]);
    }
    return true;
  }

  TokenizerJson& out_;
  const uint64_t budget_;
  const size_t text_bytes_;
  uint64_t spent_ = 0;
  bool over_budget_ = false;
  std::vector<Frame> stack_;
  std::string key_;
};

}  // namespace

std::string TokenizerJson::VocabKeys::out_of_range_value(uint32_t i) const {
  const auto it =
      std::lower_bound(out_of_range.begin(), out_of_range.end(), i,
                       [](const std::pair<uint32_t, std::string>& e, uint32_t k) { return e.first < k; });
  return it != out_of_range.end() && it->first == i ? it->second : std::string();
}

void TokenizerJson::VocabKeys::reserve_for(size_t text_bytes) {
  // Room for the vocabulary of a file made of little else.
  const Room room = room_in(text_bytes);
  const size_t entries = std::min<size_t>(room.entries, std::numeric_limits<uint32_t>::max());
  texts.reserve(entries, std::min(room.text_bytes, TokenTexts::kMaxBytes));
  reserve_huge(ids, entries);
}

bool TokenizerJson::VocabKeys::add(std::string_view key, int32_t id, std::string out_of_range_value) {
  if (ids.size() >= std::numeric_limits<uint32_t>::max() || !texts.add(key)) return false;
  if (id == kOutOfRange)
    out_of_range.emplace_back(static_cast<uint32_t>(ids.size()), std::move(out_of_range_value));
  ids.push_back(id);
  return true;
}

Result<TokenizerJson> read_tokenizer_json(std::string_view text, std::string_view name) {
  TokenizerJson out;
  const uint64_t budget = kBaseBudget + static_cast<uint64_t>(text.size());
  Reader reader(out, budget, text.size());
  // The readers of normalizer / pre-tokenizer / decoder sequences recurse with the nesting, so
  // the parse bounds it as it goes.
  const JsonSaxResult parsed = parse_json_sax(text, reader, kMaxJsonDepth);
  if (parsed.outcome == JsonSaxResult::Outcome::TooDeep)
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: JSON nested more than {} deep at byte {}",
                                                          name, kMaxJsonDepth, parsed.offset));
  if (reader.over_budget())
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("{}: {} bytes of JSON would take more than {} bytes of memory once parsed "
                                  "(outside the vocabulary, merges and added tokens)",
                                  name, text.size(), budget));
  if (!parsed.parsed())
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: not valid JSON: {}", name, parsed.message));
  return out;
}

}  // namespace glass::tokenizer::hf
