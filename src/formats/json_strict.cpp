#include "formats/json_strict.h"

#include "core/json_bounded.h"

namespace glass::formats {

Result<Json> parse_json_strict(std::string_view text, std::string_view where, uint64_t memory_factor) {
  return parse_json_bounded<Json>(text, where,
                                  {.memory_factor = memory_factor, .refuse_repeated_keys = true});
}

}  // namespace glass::formats
