#pragma once
// Readers for the tokenizer fixtures (fixtures/tokenizers/README.md): llama.cpp's test-tokenizer-0
// vectors (.inp / .out) and whole files as bytes.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace glass::test {

// The file's bytes; fails the current test (and returns "") when it cannot be read.
std::string read_text(const std::filesystem::path& path);

// One case: the text and its expected ids.
struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};
// `inp` and the .out beside it: cases separated (and usually ended) by "\n__ggml_vocab_test__\n", one
// line of " id id ..." per case.
std::vector<VocabCase> read_vocab_cases(const std::filesystem::path& inp);

}  // namespace glass::test
