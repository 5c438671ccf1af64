#pragma once
// The interactive chat loop, shared by `glass chat` and `glass run -cnv` (llama.cpp's conversation
// mode): options and the entry point.
#include <string>

#include "cli/common.h"
#include "cli/gen_options.h"

namespace glass::cli {

struct ChatOptions {
  ModelOptions model;
  GenOptions g;
  std::string system;        // -sys / --system-prompt: the conversation's first message
  std::string first_prompt;  // -p / -f: the first user turn, answered before any input is read
  // --keep N: the turns that lie within the conversation's first N tokens are never dropped when
  // the context fills (the system prompt never is; -1 = the first exchange too).
  int32_t keep = 0;
  bool single_turn = false;   // -st: answer the first prompt (or line) and exit
  std::string color = "off";  // --color on|off|auto
  bool multiline = false;     // -mli: every line continues the message (chat_input.h)
};

// Adds the chat-only flags (system prompt, --keep, --color, -st) to `cmd`.
void add_chat_flags(CLI::App& cmd, ChatOptions& o);
int run_chat(ChatOptions o);

}  // namespace glass::cli
