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
// (the key as a JSON pointer).
Result<Json> parse_json_strict(std::string_view text, std::string_view where);

}  // namespace glass::formats
