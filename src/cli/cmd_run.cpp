// glass run: generate a continuation of a prompt, streamed to stdout as it is produced; load and
// speed statistics go to stderr.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "cli/common.h"

namespace glass::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::string prompt = "Once upon a time";
  GenerateConfig gen;
  bool echo = false;
};

int run(RunOptions o) {
  // Without -c, make room for the prompt (at most one token per byte, plus BOS/EOS) and the output.
  o.model.load.min_ctx = static_cast<int64_t>(o.prompt.size()) + 2 + std::max(o.gen.max_tokens, 0);
  auto model = load_or_report(o.model);
  if (!model) return 1;
  auto session = model->new_session();
  if (!session) return report(session.error());
  auto ids = model->tokenize(o.prompt);
  if (!ids) return report(ids.error());
  if (o.echo) fmt::print("{}", o.prompt);
  std::fflush(stdout);
  auto result = generate(**session, *ids, o.gen, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputc('\n', stdout);
  if (!result) return report(result.error());
  const GenerateTimings& t = result->timings;
  fmt::print(stderr, "glass: prompt {} tokens in {:.1f} ms ({:.1f} tok/s)\n", t.n_prompt_tokens, t.prompt_ms,
             t.prompt_ms > 0 ? 1000.0 * static_cast<double>(t.n_prompt_tokens) / t.prompt_ms : 0.0);
  fmt::print(stderr,
             "glass: generated {} tokens in {:.1f} ms ({:.1f} tok/s), finish: {}, plans compiled: {}\n",
             t.n_decoded, t.decode_ms,
             t.decode_ms > 0 ? 1000.0 * static_cast<double>(t.n_decoded) / t.decode_ms : 0.0,
             finish_reason_name(result->finish), model->plans_compiled());
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt");
  add_model_options(*cmd, o->model);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text")->capture_default_str();
  cmd->add_option("-n,--n-predict", o->gen.max_tokens, "most tokens to generate")->capture_default_str();
  cmd->add_option("--temp", o->gen.sampling.temperature, "temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", o->gen.sampling.top_k, "top-k (0 = off)")->capture_default_str();
  cmd->add_option("--top-p", o->gen.sampling.top_p, "top-p (1 = off)")->capture_default_str();
  cmd->add_option("--min-p", o->gen.sampling.min_p, "min-p (0 = off)")->capture_default_str();
  cmd->add_option("-s,--seed", o->gen.sampling.seed, "sampling seed")->capture_default_str();
  cmd->add_flag("--echo", o->echo, "print the prompt before the continuation");
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace glass::cli
