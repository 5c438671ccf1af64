// glass run: generate a continuation of a prompt, streamed to stdout as it is produced; load and
// speed statistics go to stderr. --json prints the structured result instead of streaming; with
// --n-probs N it holds each generated token's log-probability and its N most likely alternatives, as
// llama.cpp's server writes n_probs ("completion_probabilities").
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/common.h"

namespace glass::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::string prompt = "Once upon a time";
  GenerateConfig gen;
  bool echo = false;
  bool json = false;
};

nlohmann::json token_json(const TokenLogprob& t, const Model& model) {
  const std::string piece = model.token_to_piece(t.id);
  nlohmann::json bytes = nlohmann::json::array();
  for (const char c : piece) bytes.push_back(static_cast<unsigned char>(c));
  return {{"id", t.id}, {"token", piece}, {"logprob", t.logprob}, {"bytes", std::move(bytes)}};
}

nlohmann::json probabilities_json(const GenerateResult& r, const Model& model) {
  nlohmann::json out = nlohmann::json::array();
  for (const TokenLogprobs& e : r.logprobs) {
    nlohmann::json j = token_json(e.token, model);
    nlohmann::json top = nlohmann::json::array();
    for (const TokenLogprob& t : e.top) top.push_back(token_json(t, model));
    j["top_logprobs"] = std::move(top);
    out.push_back(std::move(j));
  }
  return out;
}

std::string result_json(const GenerateResult& r, const Model& model, bool probabilities) {
  const GenerateTimings& t = r.timings;
  auto tps = [](int64_t n, double ms) { return ms > 0 ? 1000.0 * static_cast<double>(n) / ms : 0.0; };
  nlohmann::json j = {{"text", r.text},
                      {"tokens", r.tokens},
                      {"finish_reason", finish_reason_name(r.finish)},
                      {"seed", r.seed},
                      {"usage", {{"prompt_tokens", t.n_prompt_tokens}, {"completion_tokens", t.n_decoded}}},
                      {"timings",
                       {{"load_ms", model.info().load_ms},
                        {"prompt_ms", t.prompt_ms},
                        {"decode_ms", t.decode_ms},
                        {"ttft_ms", t.ttft_ms},
                        {"prompt_tps", tps(t.n_prompt_tokens, t.prompt_ms)},
                        {"decode_tps", tps(t.n_decoded, t.decode_ms)}}},
                      {"counters",
                       {{"plans_compiled", r.counters.plans_compiled},
                        {"kv_rows_written", r.counters.kv_rows_written},
                        {"prefix_tokens_recomputed", r.counters.prefix_tokens_recomputed}}}};
  if (probabilities) j["completion_probabilities"] = probabilities_json(r, model);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int run(RunOptions o) {
  // Without -c, make room for the prompt (at most one token per byte, plus BOS/EOS) and the output.
  o.model.load.min_ctx = static_cast<int64_t>(o.prompt.size()) + 2 + std::max(o.gen.max_tokens, 0);
  auto model = load_or_report(o.model);
  if (!model) return 1;
  auto session = model->new_session();
  if (!session) return report(session.error());
  auto ids = model->tokenize(o.prompt);
  if (!ids) return report(ids.error());
  if (o.echo && !o.json) fmt::print("{}", o.prompt);
  std::fflush(stdout);
  PieceCallback stream;
  if (!o.json)
    stream = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  auto result = generate(**session, *ids, o.gen, stream);
  if (!result) return report(result.error());
  if (o.json) {
    fmt::print("{}\n", result_json(*result, *model, o.gen.logprobs));
    return 0;
  }
  std::fputc('\n', stdout);
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
  add_sampling_options(*cmd, o->gen);
  cmd->add_flag("--echo", o->echo, "print the prompt before the continuation");
  CLI::Option* json =
      cmd->add_flag("--json", o->json, "print the result as one JSON object instead of streaming");
  cmd->add_option_function<int32_t>(
         "--n-probs",
         [o](int32_t n) {
           o->gen.logprobs = n > 0;
           o->gen.top_logprobs = n;
         },
         "with --json: each generated token's log-probability and its N most likely alternatives "
         "(\"completion_probabilities\"; from the model's logits, before sampling)")
      ->check(CLI::Range(0, kMaxTopLogprobs))
      ->needs(json);
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace glass::cli
