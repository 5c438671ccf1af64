#include "formats/json_strict.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "core/json_depth.h"

namespace glass::formats {

namespace {

// Thrown from the parser's callback to stop it once the budget is spent (nlohmann has no other
// way to abort a parse from a callback).
struct OverBudget {};

// What a parsed value costs beyond its text, roughly as nlohmann lays it out: the value itself, a
// heap string for strings past the small-string buffer, a map node and key per object member.
constexpr uint64_t kValueBytes = sizeof(Json);
constexpr uint64_t kMemberBytes = 96;
constexpr uint64_t kContainerBytes = 48;
constexpr uint64_t kBaseBudget = uint64_t{16} << 20;

}  // namespace

Result<Json> parse_json_strict(std::string_view text, std::string_view where, uint64_t memory_factor) {
  // Parsing is iterative, but what is built is walked recursively (copies, dump, the readers).
  if (Status s = check_json_depth(text, where); !s.ok()) return s.error();
  // The keys seen in each open object and the key being read there; the parser is iterative, so
  // deep nesting costs memory, not stack.
  struct Open {
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Open> open;
  std::string duplicate;  // its JSON pointer ("/weight_map/lm_head.weight")
  bool found = false;
  const uint64_t budget = kBaseBudget + memory_factor * static_cast<uint64_t>(text.size());
  uint64_t spent = 0;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start:
        spent += kValueBytes + kContainerBytes;
        break;
      case Json::parse_event_t::value:
        spent += kValueBytes + (parsed.is_string() ? parsed.get_ref<const std::string&>().size() : 0);
        break;
      case Json::parse_event_t::key:
        spent += kMemberBytes + parsed.get_ref<const std::string&>().size();
        break;
      default:
        break;
    }
    if (spent > budget) throw OverBudget{};
    switch (event) {
      case Json::parse_event_t::object_start:
        open.emplace_back();
        break;
      case Json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        if (open.empty()) break;
        open.back().current = parsed.get<std::string>();
        if (!open.back().keys.insert(open.back().current).second && !found) {
          found = true;
          for (const Open& o : open) duplicate += "/" + o.current;
        }
        break;
      default:
        break;
    }
    return true;
  };
  try {
    Json j = Json::parse(text.begin(), text.end(), callback);
    if (found) {
      return make_error(ErrorCode::InvalidFile,
                        fmt::format("{}: key '{}' appears twice in one object", where, duplicate));
    }
    return j;
  } catch (const Json::exception& e) {
    return make_error(ErrorCode::InvalidFile, fmt::format("{}: not valid JSON: {}", where, e.what()));
  } catch (const OverBudget&) {
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("{}: {} bytes of JSON would take more than {} bytes of memory once parsed",
                                  where, text.size(), budget));
  }
}

}  // namespace glass::formats
