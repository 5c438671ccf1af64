// glass: load a local LLM and run it. Each subcommand is a thin layer over the public API.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/common.h"

int main(int argc, char** argv) {
  CLI::App app{"glass: a local LLM runtime whose models are inspectable graphs"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", [] { return glass::cli::version_text(); },
      "print version, commit, build type and kernel tiers");
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
  glass::cli::add_kernels_command(app, exit_code);
  // Test hook (cli_test's help check): parse and validate the arguments, run nothing. The main
  // app's parse-complete callback runs after every check and before any subcommand's callback.
  if (const char* p = std::getenv("GLASS_CLI_PARSE_ONLY"); p != nullptr && std::string(p) == "1")
    app.parse_complete_callback([] { throw CLI::Success(); });

  auto args = glass::cli::normalize_args(app, argc, argv);
  if (!args) return glass::cli::report(args.error());
  std::vector<char*> ptrs;
  for (std::string& a : *args) ptrs.push_back(a.data());
  try {
    app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {  // no exception reaches abort(): a clean exit code instead
    return glass::cli::report(glass::make_error(glass::ErrorCode::Internal, e.what()));
  }
  return exit_code;
}
