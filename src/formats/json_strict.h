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
// InvalidFile: "<where>: not valid JSON: ..." or "<where>: key '/weight_map/x' appears twice"
// (the key as a JSON pointer), or "nested more than 128 deep" (core/json_depth.h, checked first);
// CapacityExceeded when the parsed document would take more memory than `memory_factor` x the
// text + 16 MiB (estimated while parsing, which stops there): "[0,0,0,...]" costs 8 times its
// text as nlohmann values, so a hostile file rejected after parsing would otherwise cost that
// much first. Headers, indexes and configs need factor 1; tokenizer.json (objects of short keys,
// ~100 bytes per member parsed) up to 10.
Result<Json> parse_json_strict(std::string_view text, std::string_view where, uint64_t memory_factor = 1);

}  // namespace glass::formats
