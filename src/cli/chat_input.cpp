#include "cli/chat_input.h"

namespace glass::cli {

bool read_message(std::istream& in, bool multiline, std::string& message) {
  message.clear();
  std::string line;
  bool any = false;
  while (std::getline(in, line)) {
    const bool command = !any && line.starts_with('/');
    if (any) message += '\n';
    any = true;
    if (command) {
      message += line;
      return true;
    }
    // A trailing '\' flips the mode's default for this line (llama.cpp's console does the same).
    bool more = multiline;
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      more = !multiline;
    } else if (multiline && !line.empty() && line.back() == '/') {
      line.pop_back();
      more = false;
    }
    message += line;
    if (!more) return true;
  }
  return any;
}

}  // namespace glass::cli
