// A glass user's program: loads a model with the default options and prints 8 greedy tokens.
#include <cstdio>
#include <string>

#include "glass/llm.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  auto model = glass::load_llm(argv[1], glass::LoadOptions{});
  if (!model) {
    std::fprintf(stderr, "error: %s\n", model.error().message.c_str());
    return 1;
  }
  auto session = (*model)->new_session();
  if (!session) return 1;
  glass::GenerateConfig config;
  config.max_tokens = 8;
  config.sampling.temperature = 0;
  auto result = glass::generate(**session, "Once upon a time", config);
  if (!result) {
    std::fprintf(stderr, "error: %s\n", result.error().message.c_str());
    return 1;
  }
  if (result->text.empty()) {
    std::fprintf(stderr, "error: generated no text\n");
    return 1;
  }
  std::printf("[%s] %s\n", (*model)->info().backend.c_str(), result->text.c_str());
  return 0;
}
