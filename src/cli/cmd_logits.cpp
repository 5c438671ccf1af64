// glass logits: the logits after every position of a token sequence, as a float32 .npy of shape
// [n_tokens, n_vocab]. Modes: prefill (one call), decode (first token, then one token per call
// through the KV cache), chunked:N (N tokens per call).
#include <fmt/format.h>

#include "cli/common.h"
#include "glass/files.h"
#include "glass/verify.h"

namespace glass::cli {
namespace {

struct LogitsOptions {
  ModelOptions model;
  std::string tokens;
  std::string mode = "prefill";
  std::string output;
};

int logits(LogitsOptions o) {
  auto ids = parse_token_ids(o.tokens);
  if (!ids) return report(ids.error());
  auto mode = verify::parse_mode(o.mode, static_cast<int64_t>(ids->size()));
  if (!mode) return report(mode.error());
  // Without -c/-b: room for the whole sequence, and one prefill call per chunk.
  o.model.load.min_ctx = static_cast<int64_t>(ids->size());
  if (o.model.load.n_batch == 0) o.model.load.n_batch = mode->chunk;
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  auto out = verify::eval_logits(*model, *ids, *mode);
  if (!out) return report(out.error());
  const int64_t n = static_cast<int64_t>(ids->size()), vocab = model->info().vocab_size;
  if (auto st = write_npy_f32(o.output, out->data(), {n, vocab}); !st) return report(st.error());
  fmt::print(stderr, "glass: wrote {} [{}, {}] ({} mode, {} tokens per call, plans compiled: {})\n", o.output,
             n, vocab, mode->name, mode->chunk, model->plans_compiled());
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand("logits", "write the logits after every position to a .npy file");
  add_model_options(*cmd, o->model);
  cmd->add_option("--tokens", o->tokens, "comma-separated token ids, used exactly as given")->required();
  cmd->add_option("--mode", o->mode, "prefill | decode | chunked:N")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "output .npy path")->required();
  cmd->callback([o, &exit_code] { exit_code = logits(*o); });
}

}  // namespace glass::cli
