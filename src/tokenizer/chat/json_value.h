#pragma once
// JSON <-> template values. Input keeps object key order (nlohmann::ordered_json), as Python dicts
// do. Output is Python's json.dumps, which transformers' `tojson` filter calls:
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "glass/result.h"
#include "tokenizer/chat/value.h"

namespace glass::tokenizer::chat {

Result<Value> value_from_json(const nlohmann::ordered_json& j);

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line; else the indent unit ("    " for indent=4)
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Errors: a TypeError message for values JSON cannot hold (undefined, functions, objects).
Result<std::string> dump_json(const Value& v, const JsonDumpOptions& opt, size_t max_bytes);

}  // namespace glass::tokenizer::chat
