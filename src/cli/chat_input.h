#pragma once
// How `glass chat` reads one user message, as llama-cli reads it: a line ending in '\' continues
// onto the next (the backslash dropped, the newline kept). With -mli / --multiline-input every
// line continues, and a line ending in '\' or '/' ends the message (that character dropped); a
// first line starting with '/' is a command and ends at once. Kept apart from the terminal so it
// is tested on a string stream.
#include <istream>
#include <string>

namespace glass::cli {

// False when the input ended before any line was read; a message cut off by the end of input is
// returned as it stands.
bool read_message(std::istream& in, bool multiline, std::string& message);

}  // namespace glass::cli
