#pragma once
// JSON from untrusted files (safetensors headers, shard indexes, config.json). nlohmann keeps the
// last of two equal keys silently; these formats give keys meaning (a tensor name, a shard entry),
// so a repeated key is an error naming it instead.
#include <nlohmann/json.hpp>
#include <string_view>

#include "glass/result.h"

namespace glass::formats {

using Json = nlohmann::json;

// Parses `text`; `where` names the source in messages ("model.safetensors: header"). Errors are
// core/json_bounded.h's: InvalidFile "<where>: not valid JSON: ...", "<where>: key
// '/weight_map/x' appears twice in one object", "nested more than 128 deep"; CapacityExceeded when
// the parsed document would take more than 48 MiB + `memory_factor` x the text. Headers, indexes
// and configs need factor 1; tokenizer.json (objects of short keys, ~100 bytes per member parsed)
// up to 10.
Result<Json> parse_json_strict(std::string_view text, std::string_view where, uint64_t memory_factor = 1);

}  // namespace glass::formats
