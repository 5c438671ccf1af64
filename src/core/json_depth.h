#pragma once
// A bound on JSON nesting, checked on the text before any parser sees it. nlohmann's parser is
// iterative, but the DOM it builds is walked recursively afterwards (copies, dump, comparisons, and
// glass's own readers of normalizer / pre-tokenizer / decoder sequences, template values), so a
// file of a few MB of '[' would overflow the stack there. Real files nest less than 16 deep.
#include <cstddef>
#include <string_view>

#include "glass/result.h"

namespace glass {

inline constexpr size_t kMaxJsonDepth = 128;

// InvalidFile "<where>: JSON nested more than <max_depth> deep at byte <offset>" when arrays and
// objects nest deeper than max_depth; brackets inside strings do not count. Not a validator: the
// parser still reports malformed text.
Status check_json_depth(std::string_view text, std::string_view where, size_t max_depth = kMaxJsonDepth);

}  // namespace glass
