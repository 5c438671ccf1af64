#include "support/vocab_cases.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace glass::test {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<VocabCase> read_vocab_cases(const std::filesystem::path& inp) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string all = read_text(inp);
  std::vector<VocabCase> cases;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find(sep, pos);
    if (end == std::string::npos) end = all.size();
    cases.push_back({all.substr(pos, end - pos), {}});
    pos = end == all.size() ? end : end + sep.size();
  }
  std::istringstream out(read_text(std::filesystem::path(inp).replace_extension(".out")));
  std::string line;
  for (VocabCase& c : cases) {
    EXPECT_TRUE(std::getline(out, line)) << "missing .out line";
    std::istringstream ids(line);
    for (int32_t id = 0; ids >> id;) c.ids.push_back(id);
  }
  EXPECT_FALSE(std::getline(out, line) && !line.empty()) << "extra .out lines";
  return cases;
}

}  // namespace glass::test
