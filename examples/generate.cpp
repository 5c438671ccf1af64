// A complete program against glass's public API: load a model, stream a greedy continuation, then
// run a batch of two seeded requests. Build: part of the CMake build (build/bin/glass_example_generate).
//   ./build/bin/glass_example_generate models/stories260K.gguf "Once upon a time"
#include <cstdio>
#include <string>

#include "glass/llm.h"

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "models/stories260K.gguf";
  const std::string prompt = argc > 2 ? argv[2] : "Once upon a time";

  auto model = glass::load_llm(path, glass::LoadOptions{});
  if (!model) {
    std::fprintf(stderr, "error: %s\n", model.error().message.c_str());
    return 1;
  }
  auto session = (*model)->new_session();
  if (!session) return 1;

  glass::GenerateConfig config;
  config.max_tokens = 48;
  config.sampling.temperature = 0.0f;  // greedy
  config.stop = {"\n"};
  auto result = glass::generate(**session, prompt, config, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;  // false would cancel
  });
  if (!result) {
    std::fprintf(stderr, "\nerror: %s\n", result.error().message.c_str());
    return 1;
  }
  std::printf("\n[%s: %lld prompt + %zu new tokens, %.1f ms to first token]\n",
              glass::finish_reason_name(result->finish),
              static_cast<long long>(result->timings.n_prompt_tokens), result->tokens.size(),
              result->timings.ttft_ms);

  // Two independent seeded requests advanced together, one decode call per step.
  glass::GenerateConfig sampled;
  sampled.max_tokens = 24;
  sampled.sampling.temperature = 0.9f;
  sampled.sampling.seed = 7;
  auto a = (*model)->tokenize("Lily and Tom");
  auto b = (*model)->tokenize("The dog");
  if (!a || !b) return 1;
  auto batch = glass::generate_batch(**model, {*a, *b}, {sampled});
  if (!batch) {
    std::fprintf(stderr, "error: %s\n", batch.error().message.c_str());
    return 1;
  }
  for (const auto& r : *batch) std::printf("- %s\n", r.text.c_str());
  return 0;
}
