#include "core/json_bounded.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "core/json_sax.h"

namespace glass {
namespace {

// What a parsed value costs, as nlohmann and glibc's malloc lay it out (an allocation of n bytes
// takes n + 8 rounded up to 16, at least 32): the value itself (an array element, thrice that: as
// the vector grows, its old buffer and the new one of twice the elements are held at once; counted
// twice, a 94 MB config.json of numbers peaked at 295 MB, past 2x its size + 64 MiB), a std::string block for
// a string and its heap buffer past the small-string buffer, a member (a std::map node, or an ordered_map
// entry counted twice for growth) and its key's buffer, a map or vector block per container, and an index
// entry per member of a large ordered object. Counted low (96 for a node, no string blocks), a shard index of
// 1M entries cost 247 MB where its 58 MiB allowed 180.
constexpr uint64_t chunk(uint64_t n) { return n + 8 <= 32 ? 32 : (n + 8 + 15) / 16 * 16; }
constexpr uint64_t heap_text(uint64_t size) { return size <= 15 ? 0 : chunk(size + 1); }
constexpr uint64_t kValueBytes = 3 * sizeof(nlohmann::json);
constexpr uint64_t kMemberBytes = chunk(32 + sizeof(std::string) + sizeof(nlohmann::json));
constexpr uint64_t kStringBytes = chunk(sizeof(std::string));
constexpr uint64_t kContainerBytes = chunk(48);
constexpr uint64_t kIndexBytes = chunk(8 + sizeof(std::string) + 16) + 16;
constexpr uint64_t kBaseBudget = uint64_t{48} << 20;

// An ordered object finds a repeated key by scanning its members up to this many; past it, by an
// index built then.
constexpr size_t kScanMembers = 32;

template <class Json>
class DomBuilder {
 public:
  using string_t = typename Json::string_t;
  static constexpr bool kOrdered = std::is_same_v<Json, nlohmann::ordered_json>;

  DomBuilder(uint64_t budget, bool refuse_repeated) : budget_(budget), refuse_repeated_(refuse_repeated) {}

  // The events of core/json_sax.h.
  bool null() { return value(Json(nullptr), 0); }
  bool boolean(bool v) { return value(Json(v), 0); }
  bool number_integer(int64_t v) { return value(Json(v), 0); }
  bool number_unsigned(uint64_t v) { return value(Json(v), 0); }
  bool number_float(double v) { return value(Json(v), 0); }
  bool string(string_t& v) {
    const uint64_t bytes = kStringBytes + heap_text(v.size());
    return value(Json(std::move(v)), bytes);
  }

  bool start_object() { return open(Json::object(), true); }
  bool start_array() { return open(Json::array(), false); }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool key(string_t& k) {
    if (!spend(kMemberBytes + heap_text(k.size()))) return false;
    Open& o = stack_.back();
    if (const auto [key, value] = find(o, k); value != nullptr) {
      o.key = key;
      o.slot = value;  // the last value counts, at the first key's place
      if (refuse_repeated_ && repeated_.empty()) {
        for (const Open& f : stack_)
          if (f.object) repeated_ += "/" + *f.key;
      }
      return true;
    }
    auto& members = o.container->template get_ref<typename Json::object_t&>();
    if constexpr (kOrdered) {
      // The vector under ordered_map: its emplace would search the members first.
      auto& entries = static_cast<typename Json::object_t::Container&>(members);
      if (o.index) {
        if (!spend(kIndexBytes + heap_text(k.size()))) return false;
        o.index->emplace(k, static_cast<uint32_t>(entries.size()));
      }
      entries.emplace_back(std::move(k), Json());
      o.slot = &entries.back().second;
      o.key = &entries.back().first;
      if (!o.index && entries.size() > kScanMembers && !build_index(o, entries)) return false;
    } else {
      auto [it, added] = members.emplace(std::move(k), Json());
      o.slot = &it->second;
      o.key = &it->first;
    }
    return true;
  }
  Json& root() { return root_; }
  const std::string& repeated() const { return repeated_; }
  bool over_budget() const { return over_budget_; }

 private:
  struct Open {
    Json* container;
    bool object;
    Json* slot = nullptr;              // objects: where the current member's value goes
    const std::string* key = nullptr;  // objects: the current member's key
    std::unique_ptr<std::unordered_map<std::string, uint32_t>> index;  // large ordered objects
  };

  bool spend(uint64_t bytes) {
    spent_ += bytes;
    if (spent_ <= budget_) return true;
    over_budget_ = true;
    return false;
  }

  // The member of the open object `o` with key `k`: its key and value, or nulls.
  std::pair<const std::string*, Json*> find(Open& o, const std::string& k) {
    auto& members = o.container->template get_ref<typename Json::object_t&>();
    if constexpr (kOrdered) {
      auto& entries = static_cast<typename Json::object_t::Container&>(members);
      if (o.index) {
        const auto it = o.index->find(k);
        if (it == o.index->end()) return {nullptr, nullptr};
        return {&entries[it->second].first, &entries[it->second].second};
      }
      for (auto& e : entries)
        if (e.first == k) return {&e.first, &e.second};
      return {nullptr, nullptr};
    } else {
      const auto it = members.find(k);
      if (it == members.end()) return {nullptr, nullptr};
      return {&it->first, &it->second};
    }
  }

  template <class Entries>
  bool build_index(Open& o, const Entries& entries) {
    uint64_t bytes = 0;
    for (const auto& e : entries) bytes += kIndexBytes + heap_text(e.first.size());
    if (!spend(bytes)) return false;
    o.index = std::make_unique<std::unordered_map<std::string, uint32_t>>();
    o.index->reserve(entries.size() * 2);
    for (uint32_t i = 0; i < entries.size(); ++i) o.index->emplace(entries[i].first, i);
    return true;
  }

  Json* put(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Open& o = stack_.back();
    if (!o.object) {
      o.container->push_back(std::move(v));
      return &o.container->back();
    }
    *o.slot = std::move(v);
    return o.slot;
  }
  bool value(Json v, uint64_t heap_bytes) {
    if (!spend(kValueBytes + heap_bytes)) return false;
    put(std::move(v));
    return true;
  }
  bool open(Json v, bool object) {
    if (!spend(kValueBytes + kContainerBytes)) return false;
    Json* c = put(std::move(v));
    stack_.push_back(Open{c, object});
    return true;
  }

  const uint64_t budget_;
  const bool refuse_repeated_;
  uint64_t spent_ = 0;
  bool over_budget_ = false;
  Json root_;
  // The parser is iterative: deep nesting costs memory, not stack. A container's pointer stays valid
  // while it is open: its parent grows only after it closes.
  std::vector<Open> stack_;
  std::string repeated_;  // the first repeated key's JSON pointer ("/weight_map/lm_head.weight")
};

}  // namespace

template <class Json>
Result<Json> parse_json_bounded(std::string_view text, std::string_view where, const JsonBounds& bounds) {
  // Parsing is iterative, but what is built is walked recursively (copies, dump, the readers): the
  // parse stops at the first container past the bound.
  const uint64_t budget = kBaseBudget + bounds.memory_factor * static_cast<uint64_t>(text.size());
  DomBuilder<Json> builder(budget, bounds.refuse_repeated_keys);
  JsonSaxResult parsed;
  try {
    parsed = parse_json_sax(text, builder, bounds.max_depth);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::CapacityExceeded, fmt::format("{}: out of memory parsing JSON", where));
  }
  if (parsed.outcome == JsonSaxResult::Outcome::TooDeep)
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: JSON nested more than {} deep at byte {}",
                                                          where, bounds.max_depth, parsed.offset));
  if (builder.over_budget()) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("{}: {} bytes of JSON would take more than {} bytes of memory once parsed",
                                  where, text.size(), budget));
  }
  if (!parsed.parsed())
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: not valid JSON: {}", where, parsed.message));
  if (!builder.repeated().empty()) {
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: key '{}' appears twice in one object", where, builder.repeated()));
  }
  return std::move(builder.root());
}

template Result<nlohmann::json> parse_json_bounded(std::string_view, std::string_view, const JsonBounds&);
template Result<nlohmann::ordered_json> parse_json_bounded(std::string_view, std::string_view,
                                                           const JsonBounds&);

}  // namespace glass
