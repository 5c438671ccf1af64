// glass: load a local LLM and run it. Each subcommand is a thin layer over the public API.
#include <CLI/CLI.hpp>

#include "cli/common.h"

int main(int argc, char** argv) {
  CLI::App app{"glass: a local LLM runtime whose models are inspectable graphs"};
  app.require_subcommand(1);
  int exit_code = 0;  // set by the subcommand that ran
  glass::cli::add_run_command(app, exit_code);
  glass::cli::add_verify_command(app, exit_code);
  glass::cli::add_logits_command(app, exit_code);
  glass::cli::add_graph_command(app, exit_code);
  glass::cli::add_tokenize_command(app, exit_code);
  glass::cli::add_chat_template_command(app, exit_code);
  glass::cli::add_chat_command(app, exit_code);
  glass::cli::add_detokenize_command(app, exit_code);
  glass::cli::add_bench_command(app, exit_code);
  glass::cli::add_synth_command(app, exit_code);
  glass::cli::add_quantize_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
