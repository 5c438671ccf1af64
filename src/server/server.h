#pragma once
// glass::server::Server: an OpenAI-compatible HTTP server over one glass::Engine (`glass serve`).
//
//   auto server = glass::server::Server::start({.port = 8080});   // listening; /health says 503
//   (*server)->attach(model);                                      // serving; /health says 200
//   ...
//   (*server)->shutdown(std::chrono::seconds(10));                // drain, then stop
//
// Endpoints: GET /health, GET /v1/models, POST /v1/completions, POST /v1/chat/completions (both
// streamed as server-sent events with "stream": true), POST /tokenize, POST /detokenize, GET /metrics
// (Prometheus text). Every error is an OpenAI error object; see docs/api.md ("Server"). The transport
// (http_transport.h) holds against hostile clients; browsers are kept out unless allowed
// (http_guard.h, docs/deploy.md).
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "glass/engine.h"
#include "glass/llm.h"
#include "server/reasoning.h"

namespace glass::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked: the server has no TLS
  int port = 8080;                 // 0: any free port (port() tells which)
  // Non-empty: every endpoint but /health wants "Authorization: Bearer <api_key>".
  std::string api_key;
  std::string alias;  // the model's name in responses and /v1/models; empty: its file name
  size_t max_body_bytes = size_t{8} << 20;  // larger request bodies get 413
  // Requests handled at once (a worker thread each while it is answered, streams included; idle and
  // reading connections take none); 0: 2 x engine.max_running + 8 (max_running 0 counting as 64), at
  // least 16.
  int http_threads = 0;
  // Open connections at most (idle keep-alive and slow ones included); past it a connection gets 503.
  // Capped by the descriptor limit, which start() raises toward it.
  size_t max_connections = 4096;
  // A request's head must arrive within head_timeout (from when the server awaits it, keep-alive wait
  // included) and its body within body_timeout after that; a slower client is disconnected.
  std::chrono::milliseconds head_timeout{10'000};
  std::chrono::milliseconds body_timeout{60'000};
  // Origins (scheme://host[:port]) allowed to make cross-origin requests ("*": any). Empty: requests
  // carrying another Origin than the server's own get 403 (docs/deploy.md).
  std::vector<std::string> cors_origins;
  // Thoughts apart from the answer (reasoning_content) where the chat template shows how a model
  // writes them (server/reasoning.h); None: replies as written. A request's reasoning_format overrides.
  ReasoningFormat reasoning_format = ReasoningFormat::Auto;
  // A JSON object of template variables for every chat request (--chat-template-kwargs, e.g.
  // {"enable_thinking": false}); a request's chat_template_kwargs override it name by name.
  std::string chat_template_kwargs;
  EngineOptions engine;
};

class Server {
 public:
  // Binds host:port and starts answering (503 "loading" until attach). Errors: a port that cannot be
  // bound (Io), options out of range (InvalidArgument).
  static Result<std::unique_ptr<Server>> start(const ServerOptions& options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;

  // Serves `model` from now on, through an Engine made with options.engine (or `engine`, for what
  // depends on the model, such as a step size within its n_batch). Once only.
  Status attach(std::shared_ptr<const Model> model);
  Status attach(std::shared_ptr<const Model> model, const EngineOptions& engine);

  // Stops listening, cancels the requests running (streams end without their [DONE]), waits for the
  // connections to close and the engine to stop. Idempotent; a second caller returns once the first
  // is done.
  void stop();

  // Drains, then stop(): from now on /health answers 503 {"status": "draining"} and generation
  // requests get 503 with "Connection: close", while those already taken (queued, running or still
  // writing their response) get up to `grace` to end. The port stays open meanwhile, so a load
  // balancer sees 503s rather than refused connections. Returns how many generation requests were still open
  // at the deadline (they are cancelled). stop() from another thread ends the wait at once.
  size_t shutdown(std::chrono::milliseconds grace);

  // Generation requests being answered: from their handler's start to their response's last byte.
  size_t active_requests() const;

  // The engine serving requests (null before attach), for tests and monitoring.
  Engine* engine() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace glass::server
