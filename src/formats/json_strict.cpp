#include "formats/json_strict.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

namespace glass::formats {

Result<Json> parse_json_strict(std::string_view text, std::string_view where) {
  // The keys seen in each open object and the key being read there; the parser is iterative, so
  // deep nesting costs memory, not stack.
  struct Open {
    std::set<std::string> keys;
    std::string current;
  };
  std::vector<Open> open;
  std::string duplicate;  // its JSON pointer ("/weight_map/lm_head.weight")
  bool found = false;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
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
  }
}

}  // namespace glass::formats
