#pragma once
// Token text -> id lookup, built once per vocabulary; string_view look-ups allocate nothing.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "glass/result.h"
#include "tokenizer/vocab.h"

namespace glass::tokenizer {

class TokenIndex {
 public:
  // Fails (InvalidArgument) on an empty or duplicate token text, naming both ids.
  static Result<TokenIndex> build(const Vocab& vocab);

  // The id of the token whose text is exactly `text`, or -1.
  int32_t find(std::string_view text) const {
    auto it = ids_.find(text);
    return it == ids_.end() ? -1 : it->second;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
};

}  // namespace glass::tokenizer
