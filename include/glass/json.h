#pragma once
// JSON from strangers (files, request bodies, a model's tool calls) parsed into nlohmann's DOM in
// time and memory linear in the text. nlohmann's own parse has two traps for hostile text: with a
// callback it scans an object's members each time a member object ends (a safetensors header of 1M
// tensors took 276 s), and an ordered_json object looks up every key it inserts among those before
// it (an 8 MB request body of 700k keys ran for minutes). The DOM is built here from the events of
// glass's own strict parser instead (it accepts what nlohmann's strict parse accepts, but for a NUL
// byte after the value): members appended without a search (an index per large ordered object finds
// repeated keys), what the DOM costs counted as malloc lays it out and bounded while parsing.
//
// The one public header that includes a dependency: nlohmann_json (header-only). The parser is built
// into libglass for nlohmann::json and nlohmann::ordered_json with the nlohmann_json glass was built
// with (3.11); include this header only with that version.
//
//   auto config = glass::parse_json_bounded<nlohmann::json>(text, "config.json");
//   if (!config) return config.error();  // names "config.json" and what is wrong
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "glass/files.h"
#include "glass/result.h"

namespace glass {

struct JsonBounds {
  // The parsed DOM may take 48 MiB + memory_factor x the text's size: "[0,0,0,...]" costs 16 times
  // its text as nlohmann values, so a hostile file rejected after parsing would otherwise cost that
  // much first. With factor 1 a rejected file costs at most ~2x its size + 64 MiB in all; a file
  // whose DOM legitimately costs more (tokenizer.json, ~100 bytes per short member) needs more.
  uint64_t memory_factor = 1;
  // Checked while parsing: the first container past it stops the parse. 0: not checked, for
  // callers that walk the DOM without recursion and name the field that nests too deep.
  size_t max_depth = kMaxJsonDepth;
  // A repeated key in one object is an error naming it; otherwise the last value counts, at the
  // first key's place (as nlohmann's parse and Python's json do).
  bool refuse_repeated_keys = false;
};

// Errors: InvalidFile "<where>: not valid JSON: line L, column C: <what>", "<where>: JSON nested more
// than 128 deep at byte N", "<where>: key '/a/b' appears twice in one object" (the key as a JSON
// pointer); CapacityExceeded "<where>: N bytes of JSON would take more than M bytes of memory once
// parsed".
template <class Json>
Result<Json> parse_json_bounded(std::string_view text, std::string_view where, const JsonBounds& bounds = {});

extern template Result<nlohmann::json> parse_json_bounded(std::string_view, std::string_view,
                                                          const JsonBounds&);
extern template Result<nlohmann::ordered_json> parse_json_bounded(std::string_view, std::string_view,
                                                                  const JsonBounds&);

}  // namespace glass
