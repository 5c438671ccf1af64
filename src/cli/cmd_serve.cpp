// glass serve: an OpenAI-compatible HTTP server (src/server/) over one model. It listens first and
// loads the model after, so that a supervisor polling /health sees 503 "loading" and then 200.
// SIGINT / SIGTERM drain it: new generation requests get 503 and /health says "draining" while the
// running ones get --shutdown-timeout seconds to finish; then whatever is left is cancelled, the
// connections closed and the engine stopped, and it exits 0. A second signal stops at once.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "cli/common.h"
#include "glass/tools.h"
#include "server/server.h"

namespace glass::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  server::ServerOptions server;
  double shutdown_timeout = 10;  // seconds in-flight requests get after SIGTERM / SIGINT
  std::string reasoning_format = "auto";
  int64_t ubatch = 0;  // tokens per engine step; 0: -b (the model's n_batch)
};

// Without --kv-size the pool holds `running` sequences of the full context (n_ctx x -np rows), so
// that -np long requests run together instead of preempting each other, but at most half the memory
// the weights leave, and at least one full-length sequence. The context and the row size are the
// loaded model's; the engine's session takes the size (SessionOptions: the model is loaded once).
int64_t size_kv_pool(const ModelInfo& info, int32_t running) {
  const int64_t n_ctx = info.n_ctx;
  const auto per_row = static_cast<int64_t>(info.kv_bytes_per_row);
  const int64_t wanted = n_ctx * std::max<int32_t>(1, running);
  int64_t rows = wanted;
  const uint64_t memory = memory_limit();
  if (per_row > 0 && memory > info.weight_bytes) {
    const auto cap = static_cast<int64_t>((memory - info.weight_bytes) / 2 / static_cast<uint64_t>(per_row));
    rows = std::max(n_ctx, std::min(wanted, cap));
  }
  const std::string why = rows == wanted ? fmt::format("{} x {}: the context x --parallel", n_ctx, running)
                                         : fmt::format(
                                               "half the memory the weights leave; {} x {} wanted, "
                                               "give --kv-size to choose",
                                               n_ctx, running);
  fmt::print(stderr, "glass: KV pool of {} rows, {:.1f} MiB ({})\n", rows,
             static_cast<double>(rows * per_row) / (1024.0 * 1024.0), why);
  return rows;
}

int serve(ServeOptions o) {
  // Blocked before any thread starts, so every thread inherits the mask and the signals wait for
  // sigwait below instead of killing the process mid-response.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (o.server.engine.max_running > o.model.load.n_seq_max)
    o.model.load.n_seq_max = o.server.engine.max_running;
  const int32_t running_wanted = o.server.engine.max_running > 0
                                     ? o.server.engine.max_running
                                     : static_cast<int32_t>(o.model.load.n_seq_max);
  // Checked against the three names by the option itself.
  o.server.reasoning_format =
      server::reasoning_format_named(o.reasoning_format).value_or(server::ReasoningFormat::Auto);
  auto server = server::Server::start(o.server);
  if (!server) return report(server.error());
  const std::string url = fmt::format("http://{}:{}", o.server.host, (*server)->port());
  fmt::print(stderr, "glass: listening on {} (/health answers 503 until the model is loaded)\n", url);

  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  if (model->chat_template().empty())
    fmt::print(stderr,
               "glass: warning: {} has no chat template: /v1/chat/completions answers 400 (give one with "
               "--chat-template-file)\n",
               model->info().path);
  EngineOptions engine = o.server.engine;
  const int64_t pool_rows =
      o.model.load.kv_size > 0 ? model->info().kv_size : size_kv_pool(model->info(), running_wanted);
  engine.session.kv_size = pool_rows;
  const int64_t n_batch = model->info().n_batch;
  if (o.ubatch > n_batch)
    return report(make_error(ErrorCode::InvalidArgument,
                             fmt::format("-ub {}: more than the batch ({}, -b): a step is one call of at "
                                         "most -b tokens",
                                         o.ubatch, n_batch)));
  engine.step_tokens = o.ubatch;  // 0: n_batch
  if (auto st = (*server)->attach(model, engine); !st) return report(st.error());
  const int running = o.server.engine.max_running > 0 ? o.server.engine.max_running
                                                      : static_cast<int>(model->info().n_seq_max);
  fmt::print(stderr,
             "glass: serving {} at {}: up to {} sequences at once in a KV pool of {} rows (--kv-size), {} "
             "waiting; Ctrl-C or SIGTERM drains and stops\n",
             o.server.alias.empty() ? model->info().path : o.server.alias, url, running, pool_rows,
             o.server.engine.max_queued);

  int sig = 0;
  sigwait(&signals, &sig);
  const auto t0 = std::chrono::steady_clock::now();
  fmt::print(
      stderr,
      "glass: {}: draining: {} request(s) in flight get up to {} s to finish, new ones get 503 (a second "
      "signal stops at once)\n",
      sig == SIGINT ? "SIGINT" : "SIGTERM", (*server)->active_requests(), o.shutdown_timeout);
  std::atomic<bool> drained{false};
  size_t left = 0;
  std::thread drainer([&] {
    left = (*server)->shutdown(std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000)));
    drained = true;
  });
  // The drain's end is polled so that a second signal can still cut it short. Stopping waits for the
  // HTTP workers; one busy outside the engine (parsing or rendering a huge body) cannot be cancelled,
  // so past the deadline and a few seconds more the process exits without them.
  bool forced = false;
  auto hard_stop = t0 + std::chrono::milliseconds(static_cast<int64_t>(o.shutdown_timeout * 1000)) +
                   std::chrono::seconds(5);
  std::thread stopper;
  while (!drained.load()) {
    timespec tick{.tv_sec = 0, .tv_nsec = 50'000'000};
    if (!forced && sigtimedwait(&signals, nullptr, &tick) > 0) {
      fmt::print(stderr, "glass: second signal: stopping now\n");
      forced = true;
      hard_stop = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      stopper = std::thread([&] { (*server)->stop(); });
    } else if (forced) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (std::chrono::steady_clock::now() > hard_stop) {
      fmt::print(stderr, "glass: {} request(s) still busy 5 s past the deadline; exiting without them\n",
                 (*server)->active_requests());
      std::fflush(stderr);
      std::_Exit(0);
    }
  }
  drainer.join();
  if (stopper.joinable()) stopper.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (forced)
    fmt::print(stderr, "glass: stopped at once after {:.1f} s\n", seconds);
  else if (left > 0)
    fmt::print(stderr, "glass: {} request(s) still open after {:.1f} s were cancelled; stopped\n", left,
               seconds);
  else
    fmt::print(stderr, "glass: drained in {:.1f} s; stopped\n", seconds);
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  o->server.engine.max_running = 4;
  CLI::App* cmd =
      app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, SSE streaming)");
  add_model_options(*cmd, o->model);
  add_chat_template_option(*cmd, o->model);
  cmd->add_option("--host", o->server.host, "address to listen on (loopback by default: there is no TLS)")
      ->capture_default_str();
  cmd->add_option("--port", o->server.port, "port to listen on (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o->server.api_key,
                  "require 'Authorization: Bearer KEY' on every endpoint but /health");
  cmd->add_option("--parallel", o->server.engine.max_running,
                  "most sequences generated together (continuous batching; -np as in llama-server)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--ubatch-size", o->ubatch,
                  "-ub: most tokens one engine step evaluates, decodes and prompt chunks together (default: "
                  "-b); a longer prompt is evaluated over several steps, between the running sequences' "
                  "tokens")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-queued", o->server.engine.max_queued,
                  "requests that may wait for a sequence; past it requests get 429")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--alias", o->server.alias,
                  "the model's name in responses and /v1/models (default: file name)");
  cmd->add_option("--threads-http", o->server.http_threads,
                  "requests handled at once, streams included (default: 2 x --parallel + 8, at least 16); "
                  "idle and slow connections take none")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--max-connections", o->server.max_connections,
                  "open connections at most; past it a connection gets 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option(
      "--cors-origin", o->server.cors_origins,
      "an origin (scheme://host[:port]) whose web pages may call the server; repeat for more, '*' for "
      "any (default: none: requests from browsers on other origins get 403)");
  cmd->add_option("--reasoning-format", o->reasoning_format,
                  "auto (or deepseek): a reply's thoughts (<think>, gpt-oss's analysis channel) are returned "
                  "apart, as reasoning_content; none: replies as the model wrote them")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "deepseek", "none"}));
  cmd->add_option("--chat-template-kwargs", o->server.chat_template_kwargs,
                  "a JSON object of chat template variables for every request, e.g. '{\"enable_thinking\": "
                  "false}'; a request's chat_template_kwargs override it name by name");
  cmd->add_option(
         "--shutdown-timeout", o->shutdown_timeout,
         "seconds requests in flight get to finish after SIGTERM / SIGINT (new ones get 503 meanwhile); "
         "then they are cancelled")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  // serve sizes the pool for --parallel, where the other commands default to one context.
  cmd->get_option("--kv-size")
      ->description(
          "token rows of the KV cache pool all sequences share (default: context x --parallel, so that many "
          "full-length sequences fit, at most half the memory the weights leave)");
  cmd->callback([o, &exit_code] { exit_code = serve(*o); });
}

}  // namespace glass::cli
