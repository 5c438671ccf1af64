// Which JSON Schemas glass compiles (not a test): reads schema file paths on stdin, one a line, and
// prints "path<TAB>milliseconds<TAB>ok" or "path<TAB>milliseconds<TAB>the error" for each, as
// Constraint::from_json_schema answers. scripts/jsonschemabench.py runs it over JSONSchemaBench.
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "glass/grammar.h"

int main() {
  std::string path;
  while (std::getline(std::cin, path)) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    const auto t0 = std::chrono::steady_clock::now();
    auto c = glass::Constraint::from_json_schema(text.str());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string what = c.ok() ? "ok" : c.error().message;
    for (char& ch : what)
      if (ch == '\t' || ch == '\n') ch = ' ';
    std::cout << path << '\t' << ms << '\t' << what << '\n';
  }
  return 0;
}
