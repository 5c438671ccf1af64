#pragma once
// Shared pieces of the glass command: model options, loading with stderr reporting, error exit.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "glass/llm.h"

namespace glass::cli {

struct ModelOptions {
  std::string path;  // empty: the bundled default model
  // One sequence (its block table, the sliding-window pool sized for it), unless the command runs
  // several: serve's -np and bench's -npl raise n_seq_max.
  LoadOptions load = [] {
    LoadOptions l;
    l.n_seq_max = 1;
    return l;
  }();
};

void add_model_options(CLI::App& cmd, ModelOptions& o);
// llama.cpp's sampling flags (--temp --top-k ... --seed, -1 = random) and --stop.
void add_sampling_options(CLI::App& cmd, GenerateConfig& gen);
// Loads the model, printing what was loaded (or the error) to stderr.
std::shared_ptr<Model> load_or_report(const ModelOptions& o);
int report(const Error& e);  // prints "glass: error: ..." and returns the exit code

// Token ids from "1,403,407" (spaces and brackets allowed).
Result<std::vector<int32_t>> parse_token_ids(const std::string& text);

void add_run_command(CLI::App& app, int& exit_code);
void add_chat_command(CLI::App& app, int& exit_code);
void add_verify_command(CLI::App& app, int& exit_code);
void add_logits_command(CLI::App& app, int& exit_code);
void add_graph_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_chat_template_command(CLI::App& app, int& exit_code);
void add_detokenize_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_quantize_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace glass::cli
