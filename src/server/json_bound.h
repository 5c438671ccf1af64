#pragma once
// JSON from clients and models, bounded in nesting where it is copied or dumped. nlohmann's parser and
// destructor are iterative, but copying and dumping recurse as deep as a value nests (tools and
// tool-call arguments are copied into the template's context and dumped into prompts, schemas are
// dumped for the grammar engine), so a few MB of '[' there would overflow the stack. Request bodies
// are parsed whole, in linear time (glass/json.h: nlohmann's ordered_json parse searches an
// object's keys for each key it adds); a deep value in a field that is only type-checked is a 400
// naming that field; the values that are copied or dumped are checked first (nests_deeper_than), and
// JSON inside strings (tool-call arguments, replies' calls) is parsed with the bound. Real requests
// nest less than 20 deep.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "glass/json.h"

namespace glass::server {

inline constexpr int kMaxJsonNesting = 128;

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

// JSON inside a string (tool-call arguments, a reply's calls), parsed in linear time with the
// nesting bound: a discarded value for malformed or too deeply nested text.
inline nlohmann::ordered_json parse_json_or_discarded(std::string_view text) {
  auto v = parse_json_bounded<nlohmann::ordered_json>(text, "arguments",
                                                      {.memory_factor = 16, .max_depth = kMaxJsonNesting});
  if (!v) return nlohmann::ordered_json(nlohmann::ordered_json::value_t::discarded);
  return std::move(*v);
}

}  // namespace glass::server
