#include "formats/json_strict.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <vector>

#include "core/json_depth.h"

namespace glass::formats {

namespace {

// What a parsed value costs, as nlohmann and glibc's malloc lay it out (an allocation of n bytes takes
// n + 8 rounded up to 16, at least 32): the value itself (an array element, twice that for the
// vector's growth; an object member's value lives in its map node), a std::string block for a
// string and its heap buffer past the small-string buffer, a map node per member and its key's
// buffer, a map or vector block per container. Counted low (96 for a node, no string blocks), a
// shard index of 1M entries cost 247 MB where its 58 MiB allowed 180.
constexpr uint64_t chunk(uint64_t n) { return n + 8 <= 32 ? 32 : (n + 8 + 15) / 16 * 16; }
constexpr uint64_t heap_text(uint64_t size) { return size <= 15 ? 0 : chunk(size + 1); }
constexpr uint64_t kValueBytes = 2 * sizeof(Json);
constexpr uint64_t kMemberBytes = chunk(32 + sizeof(std::string) + sizeof(Json));
constexpr uint64_t kStringBytes = chunk(sizeof(std::string));
constexpr uint64_t kContainerBytes = chunk(48);
constexpr uint64_t kBaseBudget = uint64_t{16} << 20;

// Builds the DOM from nlohmann's SAX events, counting what it costs and the keys of each open
// object. (nlohmann's callback parser, used before, scans an object's members for a discarded one
// each time a member object ends: a header of 1M tensors took 276 s to reject.)
class StrictReader {
 public:
  using string_t = Json::string_t;

  explicit StrictReader(uint64_t budget) : budget_(budget) {}

  bool null() { return value(Json(nullptr), 0); }
  bool boolean(bool v) { return value(Json(v), 0); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v), 0); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v), 0); }
  bool number_float(Json::number_float_t v, const string_t&) { return value(Json(v), 0); }
  bool string(string_t& v) {
    const uint64_t bytes = kStringBytes + heap_text(v.size());
    return value(Json(std::move(v)), bytes);
  }
  bool binary(Json::binary_t&) { return value(Json(nullptr), 0); }  // not in JSON text

  bool start_object(size_t) { return open(Json::object(), true); }
  bool start_array(size_t) { return open(Json::array(), false); }
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
    o.current = k;
    // The object holds the keys read so far (a set of copies cost ~110 bytes more per member).
    if (o.container->contains(k) && duplicate_.empty()) {
      for (const Open& f : stack_)
        if (f.object) duplicate_ += "/" + f.current;
    }
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

  Json& root() { return root_; }
  const std::string& duplicate() const { return duplicate_; }
  const std::optional<std::string>& error() const { return error_; }
  bool over_budget() const { return over_budget_; }

 private:
  struct Open {
    Json* container;
    bool object;
    std::string current;
  };

  bool spend(uint64_t bytes) {
    spent_ += bytes;
    if (spent_ <= budget_) return true;
    over_budget_ = true;
    return false;
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
    Json& slot = (*o.container)[o.current];  // a repeated key keeps the last, as nlohmann does
    slot = std::move(v);
    return &slot;
  }
  bool value(Json v, uint64_t heap_bytes) {
    if (!spend(kValueBytes + heap_bytes)) return false;
    put(std::move(v));
    return true;
  }
  bool open(Json v, bool object) {
    if (!spend(kValueBytes + kContainerBytes)) return false;
    stack_.push_back({put(std::move(v)), object, {}});
    return true;
  }

  const uint64_t budget_;
  uint64_t spent_ = 0;
  bool over_budget_ = false;
  Json root_;
  std::vector<Open> stack_;  // the parser is iterative: deep nesting costs memory, not stack
  std::string duplicate_;    // the first repeated key's JSON pointer ("/weight_map/lm_head.weight")
  std::optional<std::string> error_;
};

}  // namespace

Result<Json> parse_json_strict(std::string_view text, std::string_view where, uint64_t memory_factor) {
  // Parsing is iterative, but what is built is walked recursively (copies, dump, the readers).
  if (Status s = check_json_depth(text, where); !s.ok()) return s.error();
  const uint64_t budget = kBaseBudget + memory_factor * static_cast<uint64_t>(text.size());
  StrictReader reader(budget);
  const bool ok = Json::sax_parse(text, &reader, Json::input_format_t::json, /*strict=*/true);
  if (reader.over_budget()) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("{}: {} bytes of JSON would take more than {} bytes of memory once parsed",
                                  where, text.size(), budget));
  }
  if (reader.error())
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: not valid JSON: {}", where, *reader.error()));
  if (!ok) return make_error(ErrorCode::InvalidFile, fmt::format("{}: not valid JSON", where));
  if (!reader.duplicate().empty()) {
    return make_error(ErrorCode::InvalidFile,
                      fmt::format("{}: key '{}' appears twice in one object", where, reader.duplicate()));
  }
  return std::move(reader.root());
}

}  // namespace glass::formats
