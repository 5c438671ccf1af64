// glass run: generate a continuation of a prompt, streamed to stdout as it is produced; load and
// speed statistics go to stderr. --json prints the structured result instead of streaming; with
// --n-probs N it holds each generated token's log-probability and its N most likely alternatives, as
// llama.cpp's server writes n_probs ("completion_probabilities").
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/chat.h"
#include "cli/common.h"

namespace glass::cli {
namespace {

struct RunOptions {
  ChatOptions chat;  // the model, generation and (with -cnv) conversation options
  std::string prompt = "Once upon a time";
  bool prompt_given = false;  // -p or -f: with -cnv the first user turn
  bool conversation = false;  // -cnv, -i, --interactive-first: run the chat loop instead
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

// A generation that ended before -n for want of room says so: finish "length" alone reads as -n.
void warn_if_cut_short(const GenerateResult& r, const GenerateConfig& gen, const ModelInfo& mi) {
  const GenerateTimings& t = r.timings;
  if (r.finish != FinishReason::Length || gen.max_tokens <= 0 || t.n_decoded >= gen.max_tokens) return;
  if (t.n_prompt_tokens + t.n_decoded >= mi.n_ctx)
    warn("stopped after {} of -n {} tokens: the context of {} positions is full (-c raises it)", t.n_decoded,
         gen.max_tokens, mi.n_ctx);
  else
    warn("stopped after {} of -n {} tokens: the KV cache of {} rows is full (--kv-size raises it)",
         t.n_decoded, gen.max_tokens, mi.kv_size);
}

int run(RunOptions o) {
  GenOptions& g = o.chat.g;
  // llama.cpp's conversation mode (-cnv, -i, -sys): the chat loop, -p its first user turn.
  if (o.conversation || !o.chat.system.empty()) {
    if (o.prompt_given) o.chat.first_prompt = o.prompt;
    return run_chat(std::move(o.chat));
  }
  if (Status st = check_generation_options(g); !st) return report(st.error());
  if (g.escape) o.prompt = process_escapes(o.prompt);
  ModelOptions& mo = o.chat.model;
  // Without -c, make room for the prompt (at most one token per byte, plus BOS/EOS) and the output.
  mo.load.min_ctx = static_cast<int64_t>(o.prompt.size()) + 2 + std::max(g.gen.max_tokens, 0);
  int load_rc = 1;
  auto model = load_or_report(mo, load_rc);
  if (!model) return load_rc;
  if (Status st = prepare_generation(g, *model); !st) return report(st.error());
  auto session = open_session(*model, mo);
  if (!session) return report(session.error());
  auto ids = model->tokenize(o.prompt);
  if (!ids) return report(ids.error());
  if (static_cast<int64_t>(ids->size()) >= model->info().n_ctx)
    return report(make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("the prompt is {} tokens but the context is {} (-c)", ids->size(), model->info().n_ctx)));
  const bool color = o.chat.color == "on" || (o.chat.color == "auto" && isatty(fileno(stdout)) != 0);
  if (o.echo && !o.json) fmt::print("{}{}{}", color ? "\033[33m" : "", o.prompt, color ? "\033[0m" : "");
  std::fflush(stdout);
  const GenerateConfig& gen = g.gen;
  if (g.verbose) {
    auto chain = describe_sampler_chain(gen.sampling, model->info().vocab_size, model->info().n_ctx);
    if (chain) fmt::print(stderr, "glass: sampler chain: {}\n", *chain);
  }
  PieceCallback stream;
  if (!o.json)
    stream = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  auto result = generate(**session, *ids, gen, stream);
  if (!result) return report(result.error());
  if (o.json) {
    warn_if_cut_short(*result, gen, model->info());
    fmt::print("{}\n", result_json(*result, *model, gen.logprobs));
    return 0;
  }
  std::fputc('\n', stdout);
  const GenerateTimings& t = result->timings;
  if (g.verbose) fmt::print(stderr, "glass: seed {}\n", result->seed);
  info("prompt {} tokens in {:.1f} ms ({:.1f} tok/s)", t.n_prompt_tokens, t.prompt_ms,
       t.prompt_ms > 0 ? 1000.0 * static_cast<double>(t.n_prompt_tokens) / t.prompt_ms : 0.0);
  info("generated {} tokens in {:.1f} ms ({:.1f} tok/s), finish: {}, plans compiled: {}", t.n_decoded,
       t.decode_ms, t.decode_ms > 0 ? 1000.0 * static_cast<double>(t.n_decoded) / t.decode_ms : 0.0,
       finish_reason_name(result->finish), model->plans_compiled());
  warn_if_cut_short(*result, gen, model->info());
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "generate text from a prompt (-cnv: chat, as llama-cli)");
  add_model_options(*cmd, o->chat.model);
  add_chat_template_option(*cmd, o->chat.model);
  cmd->add_option_function<std::string>(
         "-p,--prompt",
         [o](const std::string& p) {
           o->prompt = p;
           o->prompt_given = true;
         },
         "prompt text (with -cnv: the first user message)")
      ->default_str(o->prompt);
  cmd->add_option_function<std::string>(
      "-f,--file",
      [o](const std::string& path) {
        auto text = read_text_file(path);
        if (!text) throw CLI::ValidationError("--file", text.error().message);
        o->prompt = std::move(*text);
        o->prompt_given = true;
      },
      "read the prompt from FILE");
  cmd->add_option("-n,--n-predict", o->chat.g.gen.max_tokens, "most tokens to generate")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  add_generation_options(*cmd, o->chat.g);
  add_chat_flags(*cmd, o->chat);
  cmd->add_flag("-i,--interactive,--interactive-first,--conversation", o->conversation,
                "conversation mode: chat with the model (llama.cpp's -cnv / -i; -p is the first message)");
  cmd->add_flag("--echo", o->echo, "print the prompt before the continuation");
  CLI::Option* json =
      cmd->add_flag("--json", o->json, "print the result as one JSON object instead of streaming");
  GenerateConfig& gen = o->chat.g.gen;
  cmd->add_option_function<int32_t>(
         "--n-probs",
         [&gen](int32_t n) {
           gen.logprobs = n > 0;
           gen.top_logprobs = n;
         },
         "with --json: each generated token's log-probability and its N most likely alternatives "
         "(\"completion_probabilities\"; from the model's logits, before sampling)")
      ->check(CLI::Range(0, kMaxTopLogprobs))
      ->needs(json);
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace glass::cli
