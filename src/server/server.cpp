#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <functional>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>

#include "server/generation.h"
#include "server/listen_backlog.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/sockets.h"

namespace glass::server {
namespace {

using Json = nlohmann::ordered_json;  // fields in the order OpenAI writes them
using httplib::Request;
using httplib::Response;
using HandlerResponse = httplib::Server::HandlerResponse;

// What EngineOptions::max_running 0 means with LoadOptions' default n_seq_max (the model is not
// loaded yet when the thread pool is sized).
constexpr int kDefaultSequences = 64;

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

void respond_json(const Json& j, Response& res) { res.set_content(dump(j), "application/json"); }

ApiError loading() {
  return ApiError{
      .status = 503, .message = "the model is loading; retry shortly", .type = "unavailable_error"};
}

// Constant time in the key's contents, so response times do not reveal how much of a guess was right.
bool same_key(const std::string& given, const std::string& key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

bool authorized(const Request& req, const std::string& key) {
  if (key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  return header.size() > kBearer.size() && header.compare(0, kBearer.size(), kBearer) == 0 &&
         same_key(header.substr(kBearer.size()), key);
}

std::optional<ApiError> check_model(const Served& s, const std::optional<std::string>& model) {
  if (!model || *model == s.name || *model == s.file_name) return std::nullopt;
  return ApiError{
      .status = 404,
      .message = fmt::format("the model '{}' does not exist; this server serves '{}'", *model, s.name),
      .param = "model",
      .code = "model_not_found"};
}

std::string file_name_of(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();  // a directory given with a trailing slash
  return p.filename().string();
}

// Bodies for the statuses httplib answers by itself (no route, body too large, unreadable request).
ApiError http_error(const Request& req, int status, size_t max_body) {
  switch (status) {
    case 404:
      return ApiError{.status = 404, .message = fmt::format("no endpoint {} {}", req.method, req.path)};
    case 413:
      return ApiError{.status = 413,
                      .message = fmt::format("the request body is larger than {} bytes", max_body)};
    case 400:
      return ApiError{.status = 400, .message = "malformed HTTP request"};
    default:
      return ApiError{.status = status,
                      .message = fmt::format("HTTP {}", status),
                      .type = status >= 500 ? "server_error" : "invalid_request_error"};
  }
}

ApiError draining_error() {
  return ApiError{.status = 503,
                  .message = "the server is shutting down; send the request to another replica",
                  .type = "unavailable_error"};
}

// How often a non-streamed request's connection is looked at while its handler waits.
constexpr auto kWatchInterval = std::chrono::milliseconds(20);

// Whether `a` is ip:port in the numeric form httplib gives Request::remote_addr / local_addr.
bool is_endpoint(const sockaddr_storage& a, socklen_t len, const std::string& ip, int port) {
  if (port_of(a) != port) return false;
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return false;
  return ip == host;
}

// Calls f(fd, local, peer) for each connected socket of the process, until f returns true.
template <class F>
void for_each_connection(F f) {
  for_each_socket([&](int fd, const sockaddr_storage& local, socklen_t local_len) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
    return f(fd, local, local_len, peer, peer_len);
  });
}

// The socket `req` arrived on, found by its two addresses among the process's descriptors, or -1.
// httplib 0.11 hands a handler no view of its connection (only a content provider's
// DataSink::is_writable sees it, and a provider runs after the status line is sent, too late for a
// reply whose status depends on how generation ends). While the handler runs, its connection stays
// open, so the one descriptor with these two addresses is that connection's and cannot be reused.
int connection_fd(const Request& req) {
  if (req.remote_port <= 0 || req.local_port <= 0) return -1;
  int found = -1;
  for_each_connection([&](int fd, const sockaddr_storage& local, socklen_t local_len,
                          const sockaddr_storage& peer, socklen_t peer_len) {
    if (!is_endpoint(peer, peer_len, req.remote_addr, req.remote_port) ||
        !is_endpoint(local, local_len, req.local_addr, req.local_port))
      return false;
    found = fd;
    return true;
  });
  return found;
}

// Shuts down every connection accepted on `port`, once the server stopped. httplib 0.11's worker
// on an idle keep-alive connection does not look at the server while it waits for the next request,
// so without this stopping waits out the keep-alive timeout (5 s). Only accepted sockets have the
// listening port as their own; the process's client sockets to it have it as their peer's.
void shutdown_connections(int port) {
  for_each_connection(
      [port](int fd, const sockaddr_storage& local, socklen_t, const sockaddr_storage&, socklen_t) {
        if (port_of(local) == port) shutdown(fd, SHUT_RDWR);
        return false;
      });
}

// Whether the client of `fd` has closed or reset its connection, as httplib's own is_socket_alive
// judges it: readable with nothing to read is the end of the stream. Bytes waiting (a pipelined
// next request) count as alive; a client that half-closes after its request counts as gone.
bool client_left(int fd) {
  pollfd p{.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) != 0) return true;
  char byte = 0;
  const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : opt(std::move(o)) {}

  ServerOptions opt;
  httplib::Server http;
  std::thread listener;
  int port = 0;
  Metrics metrics;
  Inflight inflight;

  mutable std::mutex mu;
  std::condition_variable changed;  // active emptied, or stopping
  std::shared_ptr<Served> served;   // null while the model loads
  bool draining = false;            // shutdown(): refuse new generation requests
  bool stopped = false;
  // Generation requests between their handler's start and the logger's call after their last byte
  // (keyed by the Request, which lives on its worker's stack for that whole time).
  std::unordered_set<const Request*> active;
  std::mutex stop_mu;  // held through stop(), so a concurrent caller returns only once it is done

  // A non-streamed request whose handler waits in respond_generation: its connection is watched and
  // its own Inflight cancelled when the client leaves (or when the server stops).
  struct Watched {
    int fd = -1;
    Inflight inflight;
    bool gone = false;
  };
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  std::list<Watched*> watched;
  bool watching_stopped = false;  // stop(): the watcher exits, every watched request is cancelled
  std::thread watcher;

  std::shared_ptr<Served> current() const {
    std::lock_guard lk(mu);
    return served;
  }

  using ServedHandler = void (Impl::*)(const std::shared_ptr<Served>&, const Request&, Response&);
  using ServedFunction = std::function<void(const std::shared_ptr<Served>&, const Request&, Response&)>;

  httplib::Server::Handler route(ServedHandler h) {
    return route(ServedFunction([this, h](const std::shared_ptr<Served>& s, const Request& req,
                                          Response& res) { (this->*h)(s, req, res); }));
  }

  // The checks every endpoint but /health makes: the key (once the body is read, so that a refused
  // request leaves a keep-alive connection readable), then the model being loaded.
  httplib::Server::Handler route(ServedFunction h) {
    return [this, h = std::move(h)](const Request& req, Response& res) {
      if (!authorized(req, opt.api_key)) {
        res.set_header("WWW-Authenticate", "Bearer");
        return respond_error(
            ApiError{.status = 401,
                     .message = "invalid or missing API key (send Authorization: Bearer <key>)",
                     .code = "invalid_api_key"},
            res);
      }
      std::shared_ptr<Served> s = current();
      if (!s) return respond_error(loading(), res);
      h(s, req, res);
    };
  }

  // route() for the endpoints that generate: refused while draining, counted as active until their
  // response's last byte is written.
  httplib::Server::Handler generation_route(ServedHandler h) {
    return route(
        ServedFunction([this, h](const std::shared_ptr<Served>& s, const Request& req, Response& res) {
          if (!begin_generation(req)) {
            // httplib writes the header itself when the request asked for it.
            if (req.get_header_value("Connection") != "close") res.set_header("Connection", "close");
            return respond_error(draining_error(), res);
          }
          (this->*h)(s, req, res);
        }));
  }

  // Registers the generation request `req` as active, unless the server drains (then false).
  bool begin_generation(const Request& req) {
    std::lock_guard lk(mu);
    if (draining || stopped) return false;
    active.insert(&req);
    return true;
  }

  // After a response's last byte (httplib's logger): the end of an active request.
  void response_done(const Request& req) {
    std::lock_guard lk(mu);
    if (active.erase(&req) > 0 && active.empty()) changed.notify_all();
  }

  void watch_loop() {
    std::unique_lock lk(watch_mu);
    while (!watching_stopped) {
      watch_cv.wait_for(lk, kWatchInterval);
      if (watching_stopped) break;
      for (Watched* w : watched)
        if (!w->gone && w->fd >= 0 && client_left(w->fd)) {
          w->gone = true;
          w->inflight.cancel_all();
        }
    }
    for (Watched* w : watched) w->inflight.cancel_all();
  }

  // Answers one validated generation request. A stream notices its client leaving by itself (a
  // write fails); a non-streamed reply is written only at the end, so its connection is watched
  // meanwhile and the request cancelled in the engine when the client has gone.
  void generate(const std::shared_ptr<Served>& s, const Request& req, Endpoint endpoint,
                std::vector<int32_t> ids, GenerationFields fields, const char* prompt_param, Response& res,
                ToolFamily tools = ToolFamily::None) {
    if (fields.stream)
      return respond_generation(GenerationContext{.served = s, .metrics = &metrics, .inflight = &inflight},
                                endpoint, std::move(ids), std::move(fields), prompt_param, res, tools);
    // respond_generation waits for every handle of a non-streamed request and removes them from
    // the Inflight before it returns, so this one may end with the handler.
    Watched w;
    w.fd = connection_fd(req);
    {
      std::lock_guard lk(watch_mu);
      if (watching_stopped) w.inflight.cancel_all();
      watched.push_back(&w);
    }
    respond_generation(GenerationContext{.served = s, .metrics = &metrics, .inflight = &w.inflight}, endpoint,
                       std::move(ids), std::move(fields), prompt_param, res, tools);
    bool gone = false;
    {
      std::lock_guard lk(watch_mu);
      watched.remove(&w);
      gone = w.gone;
    }
    // Nobody reads this reply; 499 (nginx's "client closed request") keeps it apart from shutdown's
    // 503 in glass_requests_total.
    if (gone)
      respond_error(
          ApiError{.status = 499, .message = "the client closed the connection", .type = "client_error"},
          res);
  }

  void models(const std::shared_ptr<Served>& s, const Request&, Response& res) {
    const ModelInfo& info = s->model->info();
    respond_json({{"object", "list"},
                  {"data", Json::array({{{"id", s->name},
                                         {"object", "model"},
                                         {"created", s->created},
                                         {"owned_by", "glass"},
                                         {"meta",
                                          {{"architecture", info.architecture},
                                           {"file", s->file_name},
                                           {"n_ctx", info.n_ctx},
                                           {"vocab_size", info.vocab_size},
                                           {"n_params", info.n_params}}}}})}},
                 res);
  }

  void completions(const std::shared_ptr<Served>& s, const Request& req, Response& res) {
    CompletionRequest r;
    if (auto e = parse_completion_request(req.body, s->limits, r)) return respond_error(*e, res);
    if (auto e = check_model(*s, r.fields.model)) return respond_error(*e, res);
    std::vector<int32_t> ids = std::move(r.prompt_ids);
    if (r.prompt_text) {
      // As glass::generate tokenizes a prompt for a fresh session.
      auto t = s->model->tokenize(*r.prompt_text, /*add_special=*/true, /*parse_special=*/true);
      if (!t) return respond_error(bad_field("prompt", t.error().message), res);
      ids = std::move(*t);
    }
    if (ids.empty()) return respond_error(bad_field("prompt", "is empty"), res);
    generate(s, req, Endpoint::Completion, std::move(ids), std::move(r.fields), "prompt", res);
  }

  void chat(const std::shared_ptr<Served>& s, const Request& req, Response& res) {
    ChatRequest r;
    if (auto e = parse_chat_request(req.body, s->limits, r)) return respond_error(*e, res);
    if (auto e = check_model(*s, r.fields.model)) return respond_error(*e, res);
    std::vector<int32_t> ids;
    if (auto e = chat_prompt(*s->model, r.messages, r.tools_json, ids)) return respond_error(*e, res);
    // Read back only what the prompt offered, in the syntax the template taught.
    const ToolFamily tools = r.tools_json.empty() ? ToolFamily::None : tool_family(s->model->chat_template());
    if (r.tool_choice.kind == ToolChoice::Kind::Required || r.tool_choice.kind == ToolChoice::Kind::Named) {
      if (r.fields.config.constraint)
        return respond_error(bad_field("tool_choice", "a forced tool call takes no response_format"), res);
      const ToolFamily family = tool_family(s->model->chat_template());
      if (auto e = tool_call_constraint(family, r.tools_json, r.tool_choice, r.fields.config.constraint))
        return respond_error(*e, res);
    }
    generate(s, req, Endpoint::Chat, std::move(ids), std::move(r.fields), "messages", res, tools);
  }

  void tokenize(const std::shared_ptr<Served>& s, const Request& req, Response& res) {
    TokenizeRequest r;
    if (auto e = parse_tokenize_request(req.body, r)) return respond_error(*e, res);
    auto ids = s->model->tokenize(r.content, r.add_special, r.parse_special);
    if (!ids) return respond_error(bad_field("content", ids.error().message), res);
    respond_json({{"tokens", *ids}}, res);
  }

  void detokenize(const std::shared_ptr<Served>& s, const Request& req, Response& res) {
    std::vector<int32_t> ids;
    if (auto e = parse_detokenize_request(req.body, s->limits, ids)) return respond_error(*e, res);
    respond_json({{"content", s->model->detokenize(ids)}}, res);
  }

  void metrics_text(const std::shared_ptr<Served>& s, const Request&, Response& res) {
    res.set_content(metrics.render(s->engine->stats(), s->model->plans_compiled()),
                    "text/plain; version=0.0.4; charset=utf-8");
  }

  void install_routes() {
    // 503 while draining too: a readiness probe then takes the replica out of its Service.
    http.Get("/health", [this](const Request&, Response& res) {
      std::string status = "loading";
      {
        std::lock_guard lk(mu);
        if (draining || stopped)
          status = "draining";
        else if (served)
          status = "ok";
      }
      res.status = status == "ok" ? 200 : 503;
      respond_json({{"status", status}}, res);
    });
    http.Get("/v1/models", route(&Impl::models));
    http.Post("/v1/completions", generation_route(&Impl::completions));
    http.Post("/v1/chat/completions", generation_route(&Impl::chat));
    http.Post("/tokenize", route(&Impl::tokenize));
    http.Post("/detokenize", route(&Impl::detokenize));
    http.Get("/metrics", route(&Impl::metrics_text));

    // Called for every response of status >= 400: fills in those httplib made without a body.
    http.set_error_handler(httplib::Server::HandlerWithResponse([this](const Request& req, Response& res) {
      if (!res.body.empty()) return HandlerResponse::Unhandled;
      respond_error(http_error(req, res.status, opt.max_body_bytes), res);
      return HandlerResponse::Handled;
    }));
    // Handlers return errors as values; this is the net for what still throws (bad_alloc).
    http.set_exception_handler([](const Request&, Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = fmt::format("internal error: {}", e.what());
      } catch (...) {
      }
      respond_error(ApiError{.status = 500, .message = what, .type = "server_error"}, res);
    });
    // After the response was written: the status it went out with.
    http.set_logger([this](const Request& req, const Response& res) {
      metrics.response_written(res.status);
      response_done(req);
    });
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { stop(); }

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options) {
  if (options.port < 0 || options.port > 65535)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("server: port {} outside [0, 65535]", options.port));
  if (options.max_body_bytes == 0)
    return make_error(ErrorCode::InvalidArgument, "server: max_body_bytes must be positive");
  if (options.http_threads < 0)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("server: http_threads {} must not be negative", options.http_threads));
  try {
    auto impl = std::make_unique<Impl>(options);
    Impl& s = *impl;
    s.install_routes();
    s.http.set_payload_max_length(options.max_body_bytes);
    s.http.set_tcp_nodelay(true);  // streamed events are small writes: send each at once
    const size_t threads =
        options.http_threads > 0
            ? static_cast<size_t>(options.http_threads)
            : static_cast<size_t>(std::max(
                  16,
                  2 * (options.engine.max_running > 0 ? options.engine.max_running : kDefaultSequences) + 8));
    s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
    if (options.port == 0) {
      s.port = s.http.bind_to_any_port(options.host);
    } else {
      s.port = s.http.bind_to_port(options.host, options.port) ? options.port : -1;
    }
    if (s.port <= 0)
      return make_error(ErrorCode::Io,
                        fmt::format("server: cannot listen on {}:{} (in use, or not an address "
                                    "of this machine?)",
                                    options.host, options.port));
    // A burst of connections larger than httplib's backlog of 5 waits in the kernel's queue instead
    // of retransmitting its SYNs (listen_backlog.h).
    raise_listen_backlog(s.port, SOMAXCONN);
    s.listener = std::thread([p = &s] { p->http.listen_after_bind(); });
    s.watcher = std::thread([p = &s] { p->watch_loop(); });
    // stop() only reaches a listener that runs: wait for it, boundedly.
    for (int i = 0; i < 5000 && !s.http.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!s.http.is_running()) {
      // Unreachable in practice (the thread was not scheduled for 5 s). The thread may still start
      // and then read `s`, so it is left to it rather than destroyed under it.
      s.listener.detach();
      {
        std::lock_guard lk(s.watch_mu);
        s.watching_stopped = true;
      }
      s.watch_cv.notify_all();
      s.watcher.join();
      static_cast<void>(impl.release());
      return make_error(ErrorCode::Internal, "server: the listener did not start");
    }
    return std::unique_ptr<Server>(new Server(std::move(impl)));
  } catch (const std::exception& e) {
    return make_error(ErrorCode::Internal, fmt::format("server: cannot start: {}", e.what()));
  }
}

int Server::port() const { return impl_->port; }

Status Server::attach(std::shared_ptr<const Model> model) {
  return attach(std::move(model), impl_->opt.engine);
}

Status Server::attach(std::shared_ptr<const Model> model, const EngineOptions& engine_options) {
  if (!model) return make_error(ErrorCode::InvalidArgument, "server: no model");
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->served) return make_error(ErrorCode::InvalidArgument, "server: a model is attached already");
    if (impl_->stopped) return make_error(ErrorCode::Cancelled, "server: stopped");
  }
  auto engine = Engine::create(model, engine_options);
  if (!engine) return engine.error();
  auto s = std::make_shared<Served>();
  const ModelInfo& info = model->info();
  s->file_name = file_name_of(info.path);
  s->name = impl_->opt.alias.empty() ? s->file_name : impl_->opt.alias;
  s->created = static_cast<int64_t>(std::time(nullptr));
  s->limits = ModelLimits{.vocab_size = info.vocab_size, .n_ctx = info.n_ctx};
  s->model = std::move(model);
  s->engine = std::move(*engine);
  std::lock_guard lk(impl_->mu);
  if (impl_->stopped) return make_error(ErrorCode::Cancelled, "server: stopped");
  impl_->served = std::move(s);
  return {};
}

void Server::stop() {
  std::lock_guard stopping(impl_->stop_mu);
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->changed.notify_all();  // a shutdown() waiting for the drain stops waiting
  // Cancelled first, so that streams end and their connections let the workers go.
  impl_->inflight.cancel_all();
  {
    std::lock_guard lk(impl_->watch_mu);
    impl_->watching_stopped = true;
  }
  impl_->watch_cv.notify_all();
  if (impl_->watcher.joinable()) impl_->watcher.join();  // it cancels the non-streamed requests
  impl_->http.stop();
  {
    // What was cancelled writes its end first (bounded), so that only idle connections are cut.
    std::unique_lock lk(impl_->mu);
    impl_->changed.wait_for(lk, std::chrono::seconds(1), [&] { return impl_->active.empty(); });
  }
  shutdown_connections(impl_->port);
  if (impl_->listener.joinable()) impl_->listener.join();
  std::shared_ptr<Served> last;
  {
    std::lock_guard lk(impl_->mu);
    last = std::move(impl_->served);
  }
  last.reset();  // the engine stops here, with no connection left to read from it
}

size_t Server::shutdown(std::chrono::milliseconds grace) {
  size_t open = 0;
  {
    std::unique_lock lk(impl_->mu);
    impl_->draining = true;
    impl_->changed.wait_for(lk, grace, [&] { return impl_->active.empty() || impl_->stopped; });
    open = impl_->active.size();
  }
  stop();
  return open;
}

size_t Server::active_requests() const {
  std::lock_guard lk(impl_->mu);
  return impl_->active.size();
}

Engine* Server::engine() const {
  std::lock_guard lk(impl_->mu);
  return impl_->served ? impl_->served->engine.get() : nullptr;
}

}  // namespace glass::server
