// glass serve: an OpenAI-compatible HTTP server (src/server/) over one model. It listens first and
// loads the model after, so that a supervisor polling /health sees 503 "loading" and then 200.
// SIGINT / SIGTERM stop it: running requests are cancelled, connections closed, the engine stopped.
#include <fmt/format.h>

#include <csignal>
#include <memory>
#include <string>

#include "cli/common.h"
#include "server/server.h"

namespace glass::cli {
namespace {

struct ServeOptions {
  ModelOptions model;
  server::ServerOptions server;
};

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
  auto server = server::Server::start(o.server);
  if (!server) return report(server.error());
  const std::string url = fmt::format("http://{}:{}", o.server.host, (*server)->port());
  fmt::print(stderr, "glass: listening on {} (/health answers 503 until the model is loaded)\n", url);

  auto model = load_or_report(o.model);
  if (!model) return 1;
  if (model->chat_template().empty())
    fmt::print(stderr,
               "glass: warning: {} has no chat template: /v1/chat/completions answers 400 (give one with "
               "--chat-template-file)\n",
               model->info().path);
  if (auto st = (*server)->attach(model); !st) return report(st.error());
  const int running = o.server.engine.max_running > 0 ? o.server.engine.max_running
                                                      : static_cast<int>(model->info().n_seq_max);
  fmt::print(stderr,
             "glass: serving {} at {}: up to {} sequences at once in a KV pool of {} rows (--kv-size), {} "
             "waiting; Ctrl-C stops\n",
             o.server.alias.empty() ? model->info().path : o.server.alias, url, running,
             model->info().kv_size, o.server.engine.max_queued);

  int sig = 0;
  sigwait(&signals, &sig);
  fmt::print(stderr, "glass: {}: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->stop();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  o->server.engine.max_running = 4;
  CLI::App* cmd =
      app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, SSE streaming)");
  add_model_options(*cmd, o->model);
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
  cmd->add_option("--max-queued", o->server.engine.max_queued,
                  "requests that may wait for a sequence; past it requests get 429")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--alias", o->server.alias,
                  "the model's name in responses and /v1/models (default: file name)");
  cmd->add_option("--threads-http", o->server.http_threads,
                  "connections served at once (default: 2 x --parallel + 8, at least 16)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([o, &exit_code] { exit_code = serve(*o); });
}

}  // namespace glass::cli
