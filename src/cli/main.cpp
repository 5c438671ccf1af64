// glass: load a local LLM and run it. Each subcommand is a thin layer over the public API.
#include <CLI/CLI.hpp>
#include <string_view>

#include "cli/common.h"

namespace {

// llama.cpp's multi-letter flags with one dash, which CLI11 would read as a short flag and its value
// (-npl 4 as -n pl): spelled with two before parsing.
void lengthen_llama_flags(int argc, char** argv) {
  static char npp[] = "--npp", ntg[] = "--ntg", npl[] = "--npl", pps[] = "--pps", np[] = "--parallel";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-npp") argv[i] = npp;
    if (a == "-ntg") argv[i] = ntg;
    if (a == "-npl") argv[i] = npl;
    if (a == "-pps") argv[i] = pps;
    if (a == "-np") argv[i] = np;  // glass serve, as llama-server's
  }
}

}  // namespace

int main(int argc, char** argv) {
  lengthen_llama_flags(argc, argv);
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
  glass::cli::add_serve_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
