#pragma once
// Shared pieces of the glass command: model options, loading with stderr reporting, error exit.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/log.h"
#include "glass/llm.h"

namespace glass::cli {

struct ModelOptions {
  std::string path;  // empty: the bundled default model
  // One sequence (its block table, the sliding-window pool sized for it), unless the command runs
  // several: serve's -np and bench's -npl raise n_seq_max.
  // -c and -b as the user gave them (a command may size n_ctx / n_batch itself: those are not checked).
  const CLI::Option* ctx_given = nullptr;
  const CLI::Option* batch_given = nullptr;
  // llama.cpp's -ctk / -ctv as given (empty: not given); --cache-type sets both. glass keeps K and V
  // in one element type, so the two must agree (checked with the rest).
  std::string cache_type_k, cache_type_v;
  LoadOptions load = [] {
    LoadOptions l;
    l.n_seq_max = 1;
    return l;
  }();
};

// The bundled default model (when -m is not given): ./models/stories260K.gguf, else the source tree's.
std::string default_model();
// The help footer naming the GPU options that are accepted and ignored.
extern const char* const kGpuFooter;
// The options every model-loading command reads (-m, -c, -b, -t, the backend's, --log-disable).
void add_model_options(CLI::App& cmd, ModelOptions& o);
// --chat-template-file: only the commands that render chats (chat, run -cnv, serve).
void add_chat_template_option(CLI::App& cmd, ModelOptions& o);
// Loads the model, printing what was loaded (or the error) to stderr. Resource arguments are
// checked first (-t, -b, -c against the model and memory) and a context past the model's training
// context is a warning. On failure, null, with `exit_code` set as report() sets it (2 for a bad
// argument, such as a folder holding no model; 1 otherwise).
std::shared_ptr<Model> load_or_report(const ModelOptions& o, int& exit_code);
// A session; when its KV cache does not fit, the error names -c / --kv-size.
Result<std::unique_ptr<Session>> open_session(const Model& model, const ModelOptions& o);
int report(const Error& e);  // prints "glass: error: ..." and returns the exit code

// Informational lines on stderr ("glass: ..."), silenced by --log-disable (cli/log.h); errors and
// warnings always print.
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  if (log_enabled()) fmt::print(stderr, "glass: {}\n", fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  fmt::print(stderr, "glass: warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

// Token ids from "1,403,407", "1 403 407" or "[1, 403, 407]": one separator between ids, each id
// in [0, 2^31); "1,,2", "1,", "x" are errors naming the place.
Result<std::vector<int32_t>> parse_token_ids(const std::string& text);
// The whole file as text; errors name it.
Result<std::string> read_text_file(const std::string& path);

// glass --version's text.
std::string version_text();

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
void add_kernels_command(CLI::App& app, int& exit_code);

}  // namespace glass::cli
