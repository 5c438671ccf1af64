// How chat reads a message (chat_input.h): llama-cli's backslash continuation, and -mli's inverse.
#include "cli/chat_input.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace glass::cli {
namespace {

std::vector<std::string> messages(const std::string& text, bool multiline) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string m; read_message(in, multiline, m);) out.push_back(m);
  return out;
}

TEST(ChatInput, ABackslashContinuesOntoTheNextLine) {
  EXPECT_EQ(messages("one\ntwo\n", false), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(messages("first \\\nsecond\\\nthird\nnext\n", false),
            (std::vector<std::string>{"first \nsecond\nthird", "next"}));
  EXPECT_EQ(messages("a/\n", false), (std::vector<std::string>{"a/"}));  // '/' ends nothing here
  EXPECT_EQ(messages("cut off\\", false), (std::vector<std::string>{"cut off"}));
  EXPECT_EQ(messages("", false), (std::vector<std::string>{}));
  EXPECT_EQ(messages("\n", false), (std::vector<std::string>{""}));  // an empty line: the loop skips it
}

TEST(ChatInput, MultilineEndsAtABackslashOrSlash) {
  EXPECT_EQ(messages("one\ntwo\\\nthree\nfour/\n", true),
            (std::vector<std::string>{"one\ntwo", "three\nfour"}));
  // Pasted text without an end marker is sent when the input ends.
  EXPECT_EQ(messages("def f():\n    return 1\n", true), (std::vector<std::string>{"def f():\n    return 1"}));
  // A command on the first line is taken at once; a slash inside a line is text.
  EXPECT_EQ(messages("/clear\na/b\nc\\\n", true), (std::vector<std::string>{"/clear", "a/b\nc"}));
}

}  // namespace
}  // namespace glass::cli
