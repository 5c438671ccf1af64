// glass's JSON parser (core/json_sax.h) against nlohmann's strict parse as the oracle: the same
// texts accepted, with the same events; nesting bounds that stop it before the containers past them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "support/json_events.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto ours = glass::testing::glass_json_events(text);
  const auto theirs = glass::testing::nlohmann_json_events(text);
  // nlohmann ends the text at a NUL byte, where glass sees a byte that is not JSON.
  if (!ours && theirs && text.find('\0') != std::string_view::npos) return 0;
  if (ours.has_value() != theirs.has_value()) __builtin_trap();
  if (ours && *ours != *theirs) __builtin_trap();
  // A bound stops the parse at the first container past it, after the same events.
  glass::testing::JsonEvents bounded;
  const glass::JsonSaxResult r = glass::parse_json_sax(text, bounded, 4);
  if (ours && r.outcome == glass::JsonSaxResult::Outcome::Parsed && bounded.events != *ours) __builtin_trap();
  if (r.outcome == glass::JsonSaxResult::Outcome::TooDeep && (text[r.offset] != '[' && text[r.offset] != '{'))
    __builtin_trap();
  return 0;
}
