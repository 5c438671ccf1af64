#pragma once
// JSON from clients and models, bounded in nesting where it is copied or dumped. nlohmann's parser and
// destructor are iterative, but copying and dumping recurse as deep as a value nests (tools and
// tool-call arguments are copied into the template's context and dumped into prompts, schemas are
// dumped for the grammar engine), so a few MB of '[' there would overflow the stack. Request bodies
// are parsed whole (a deep value in a field that is only type-checked is a 400 naming that field);
// the values that are copied or dumped are checked first (nests_deeper_than), and JSON inside
// strings (tool-call arguments, replies' calls) is parsed with the bound (parse_json_bounded). Real
// requests nest less than 20 deep.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

namespace glass::server {

inline constexpr int kMaxJsonNesting = 128;

// Thrown by parse_json_bounded when arrays and objects nest deeper than kMaxJsonNesting.
struct JsonTooDeep {};

// Malformed text throws nlohmann's parse_error, as Json::parse does.
inline nlohmann::ordered_json parse_json_bounded(std::string_view text) {
  using Json = nlohmann::ordered_json;
  return Json::parse(text, [](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonNesting)
      throw JsonTooDeep{};
    return true;
  });
}

// Whether `v` nests arrays and objects deeper than `max` (v itself at depth 1), walked without
// recursion: for values read from a body before anything copies or dumps them.
inline bool nests_deeper_than(const nlohmann::ordered_json& v, size_t max) {
  std::vector<std::pair<const nlohmann::ordered_json*, size_t>> todo = {{&v, 1}};
  while (!todo.empty()) {
    const auto [j, depth] = todo.back();
    todo.pop_back();
    if (!j->is_structured()) continue;
    if (depth > max) return true;
    for (const auto& child : *j) todo.emplace_back(&child, depth + 1);
  }
  return false;
}

// The same without exceptions: a discarded value for malformed or too deeply nested text.
inline nlohmann::ordered_json parse_json_or_discarded(std::string_view text) {
  try {
    return parse_json_bounded(text);
  } catch (const nlohmann::ordered_json::exception&) {
  } catch (const JsonTooDeep&) {
  }
  return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
}

}  // namespace glass::server
