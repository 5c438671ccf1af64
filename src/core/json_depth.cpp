#include "core/json_depth.h"

#include <fmt/format.h>

namespace glass {

Status check_json_depth(std::string_view text, std::string_view where, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character, a quote included, cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > max_depth)
          return make_error(ErrorCode::InvalidFile,
                            fmt::format("{}: JSON nested more than {} deep at byte {}", where, max_depth, i));
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;  // unbalanced text is the parser's to report
        break;
      default:
        break;
    }
  }
  return {};
}

}  // namespace glass
