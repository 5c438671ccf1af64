// The engine's cost per decode step at one sequence: the same greedy request (a prompt, then
// max_tokens decode steps, end-of-generation ignored) through generate() on a session and through
// Engine::submit, alternating, and the engine's extra time per generated token against the step.
//   glass_engine_bench [MODEL.gguf] [threads] [max_tokens] [pairs]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "glass/engine.h"

int main(int argc, char** argv) {
  using namespace glass;
  using Clock = std::chrono::steady_clock;
  const std::string path = argc > 1 ? argv[1] : std::string(GLASS_SOURCE_DIR) + "/models/stories260K.gguf";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const int max_tokens = argc > 3 ? std::atoi(argv[3]) : 128;
  const int pairs = argc > 4 ? std::atoi(argv[4]) : 5;
  LoadOptions opt;
  opt.backend = "cpu";
  opt.n_threads = threads;
  opt.n_ctx = 64 + max_tokens + 1;
  auto model = load_llm(path, opt);
  if (!model) {
    fmt::print(stderr, "glass_engine_bench: {}\n", model.error().message);
    return 1;
  }
  const std::vector<int32_t> prompt(32, 1);
  GenerateConfig cfg;
  cfg.max_tokens = max_tokens;
  cfg.sampling.temperature = 0;
  cfg.stop_at_end_of_generation = false;
  auto engine = Engine::create(*model, {.prefix_cache = false});  // every prompt token evaluated, as generate
  if (!engine) {
    fmt::print(stderr, "glass_engine_bench: {}\n", engine.error().message);
    return 1;
  }
  std::vector<double> direct, served;
  for (int i = 0; i < pairs + 1; ++i) {  // the first pair warms up; the two take turns going first
    Result<GenerateResult> r = make_error(ErrorCode::Internal, "not run"), e = r;
    double a = 0, b = 0;
    for (int k = 0; k < 2; ++k) {
      const auto t0 = Clock::now();
      if ((k == 0) == (i % 2 == 0)) {
        auto session = (*model)->new_session();
        if (!session) return 1;
        r = generate(**session, prompt, cfg);
        a = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      } else {
        auto h = (*engine)->submit({prompt, cfg});
        if (!h) return 1;
        e = (*h)->wait();
        b = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      }
    }
    if (!r || !e || e->tokens != r->tokens) {
      fmt::print(stderr, "glass_engine_bench: the engine's tokens differ from generate's\n");
      return 1;
    }
    if (i > 0) {
      direct.push_back(a);
      served.push_back(b);
    }
  }
  std::sort(direct.begin(), direct.end());
  std::sort(served.begin(), served.end());
  const double a = direct[direct.size() / 2], b = served[served.size() / 2];
  fmt::print("{}: {} prompt + {} tokens, {} threads, median of {} alternating pairs\n", path, prompt.size(),
             max_tokens, threads, pairs);
  fmt::print("generate: {:.1f} ms ({:.3f} ms per token)\nengine:   {:.1f} ms ({:.3f} ms per token)\n", a,
             a / max_tokens, b, b / max_tokens);
  fmt::print("engine overhead: {:+.2f}% of the request ({:+.1f} us per token)\n", 100.0 * (b - a) / a,
             1000.0 * (b - a) / max_tokens);
  return 0;
}
