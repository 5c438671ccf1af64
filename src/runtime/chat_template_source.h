#pragma once
// The chat template a Model carries: its source and the parsed form, or why it did not parse.
#include <optional>
#include <string>

#include "glass/result.h"
#include "tokenizer/chat/chat_template.h"

namespace glass {

struct ChatTemplateSlot {
  std::string source;  // "" when the model has none
  std::optional<tokenizer::chat::ChatTemplate> parsed;
  std::optional<Error> error;  // set when source is not empty and did not parse

  void load(std::string text);
};

}  // namespace glass
