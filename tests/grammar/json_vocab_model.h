#pragma once
// A random-weight llama whose vocabulary suits JSON: every byte as a byte token plus JSON pieces
// (brackets, quotes with their neighbours, literals, digits, common key words). Its weights are
// small, so its unconstrained output is noise spread over the whole vocabulary: only a constraint
// makes it JSON. Written under the test temp dir.
#include <cstdint>
#include <filesystem>

namespace glass::test {

std::filesystem::path write_json_vocab_model(uint64_t seed = 7);

}  // namespace glass::test
