#include "server/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "server/generation.h"
#include "server/http_guard.h"
#include "server/http_transport.h"
#include "server/json_bound.h"
#include "server/metrics.h"
#include "server/openai_request.h"

namespace glass::server {
namespace {

using Json = nlohmann::ordered_json;  // fields in the order OpenAI writes them
using Request = HttpRequest;
using Response = HttpResponse;

// What EngineOptions::max_running 0 means with LoadOptions' default n_seq_max (the model is not
// loaded yet when the thread pool is sized).
constexpr int kDefaultSequences = 64;
// Worker threads at most (--threads-http): each is a thread with its own stack.
constexpr int kMaxHttpThreads = 4096;

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

// The body of what the transport refuses by itself (malformed, too large, too many connections).
HttpResponse transport_error(int status, const std::string& message) {
  HttpResponse res;
  respond_error(ApiError{.status = status,
                         .message = message,
                         .type = status == 503   ? "unavailable_error"
                                 : status >= 500 ? "server_error"
                                                 : "invalid_request_error"},
                res);
  return res;
}

ApiError draining_error() {
  return ApiError{.status = 503,
                  .message = "the server is shutting down; send the request to another replica",
                  .type = "unavailable_error"};
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : opt(std::move(o)) {
    guard.bind_host = opt.host;
    guard.cors_origins = opt.cors_origins;
  }

  ServerOptions opt;
  GuardOptions guard;
  std::unique_ptr<HttpTransport> http;
  int port = 0;
  Metrics metrics;
  Inflight inflight;

  mutable std::mutex mu;
  std::condition_variable changed;  // active emptied, or stopping
  std::shared_ptr<Served> served;   // null while the model loads
  bool draining = false;            // shutdown(): refuse new generation requests
  bool stopped = false;
  // Generation requests between their handler's start and the transport's call after their last
  // byte (keyed by the request, which the connection keeps for that whole time).
  std::unordered_set<const Request*> active;
  std::mutex stop_mu;  // held through stop(), so a concurrent caller returns only once it is done

  // Non-streamed requests whose handler waits in respond_generation: each its own Inflight, cancelled
  // when its client leaves (ClientWatch) or the server stops.
  std::mutex waiting_mu;
  std::list<Inflight*> waiting;
  bool waiting_stopped = false;

  using Handler = std::function<void(const Request&, Response&)>;
  std::map<std::pair<std::string, std::string>, Handler> routes;  // (method, path)

  std::shared_ptr<Served> current() const {
    std::lock_guard lk(mu);
    return served;
  }

  using ServedHandler = void (Impl::*)(const std::shared_ptr<Served>&, const Request&, Response&);
  using ServedFunction = std::function<void(const std::shared_ptr<Served>&, const Request&, Response&)>;

  Handler route(ServedHandler h) {
    return route(ServedFunction([this, h](const std::shared_ptr<Served>& s, const Request& req,
                                          Response& res) { (this->*h)(s, req, res); }));
  }

  // The checks every endpoint but /health makes: the key (once the body is read, so that a refused
  // request leaves a keep-alive connection readable), then the model being loaded.
  Handler route(ServedFunction h) {
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
  Handler generation_route(ServedHandler h) {
    return route(
        ServedFunction([this, h](const std::shared_ptr<Served>& s, const Request& req, Response& res) {
          if (!begin_generation(req)) {
            res.set_header("Connection", "close");
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

  // After a response's last byte (or its failed write): the end of an active request.
  void response_done(const Request& req) {
    std::lock_guard lk(mu);
    if (active.erase(&req) > 0 && active.empty()) changed.notify_all();
  }

  // Answers one validated generation request. A stream notices its client leaving by itself (a
  // write fails); a non-streamed reply is written only at the end, so the transport watches its
  // connection meanwhile and the request is cancelled in the engine when the client has gone.
  void generate(const std::shared_ptr<Served>& s, const Request& req, Endpoint endpoint,
                std::vector<int32_t> ids, GenerationFields fields, const char* prompt_param, Response& res,
                ReplyFormat format = {}) {
    if (fields.stream)
      return respond_generation(GenerationContext{.served = s, .metrics = &metrics, .inflight = &inflight},
                                endpoint, std::move(ids), std::move(fields), prompt_param, res, format);
    // respond_generation waits for every handle of a non-streamed request and removes them from
    // the Inflight before it returns, so this one may end with the handler.
    Inflight own;
    {
      std::lock_guard lk(waiting_mu);
      if (waiting_stopped) own.cancel_all();
      waiting.push_back(&own);
    }
    req.watch->on_gone([&own] { own.cancel_all(); });
    respond_generation(GenerationContext{.served = s, .metrics = &metrics, .inflight = &own}, endpoint,
                       std::move(ids), std::move(fields), prompt_param, res, format);
    req.watch->clear();
    {
      std::lock_guard lk(waiting_mu);
      waiting.remove(&own);
    }
    // Nobody reads this reply; 499 (nginx's "client closed request") keeps it apart from shutdown's
    // 503 in glass_requests_total.
    if (req.watch->gone())
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
                                         {"max_model_len", info.n_ctx},  // vLLM's name for the context
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
    if (!opt.chat_template_kwargs.empty()) {
      // The server's variables, then the request's over them (both objects: checked before).
      Json kwargs = parse_json_or_discarded(opt.chat_template_kwargs);
      if (!r.template_kwargs_json.empty()) {
        Json own = parse_json_or_discarded(r.template_kwargs_json);
        for (auto& [k, v] : own.items()) kwargs[k] = std::move(v);
      }
      r.template_kwargs_json = kwargs.dump();
    }
    ChatPrompt prompt;
    if (auto e = chat_prompt(*s->model, r, prompt)) return respond_error(*e, res);
    // Read back only what the prompt offered, in the syntax the template taught.
    const std::string& chat_template = s->model->chat_template();
    ReplyFormat format{.tools = r.tools_json.empty() ? ToolFamily::None : tool_family(chat_template),
                       .tools_json = r.tools_json};
    const ReasoningFormat reasoning =
        r.reasoning_format ? reasoning_format_named(*r.reasoning_format).value_or(opt.reasoning_format)
                           : opt.reasoning_format;
    const ReplySyntax syntax = reply_syntax(chat_template);
    format.reading = reply_reading(syntax, reasoning, prompt.text);
    format.control_text = syntax == ReplySyntax::Harmony;
    if (r.tool_choice.kind == ToolChoice::Kind::Required || r.tool_choice.kind == ToolChoice::Kind::Named) {
      if (r.fields.config.constraint)
        return respond_error(bad_field("tool_choice", "a forced tool call takes no response_format"), res);
      const ToolFamily family = tool_family(s->model->chat_template());
      if (auto e = tool_call_constraint(family, r.tools_json, r.tool_choice, r.fields.config.constraint))
        return respond_error(*e, res);
    }
    generate(s, req, Endpoint::Chat, std::move(prompt.ids), std::move(r.fields), "messages", res, format);
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

  void health(const Request&, Response& res) {
    // 503 while draining too: a readiness probe then takes the replica out of its Service.
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
  }

  void install_routes() {
    routes[{"GET", "/health"}] = [this](const Request& req, Response& res) { health(req, res); };
    routes[{"GET", "/v1/models"}] = route(&Impl::models);
    routes[{"POST", "/v1/completions"}] = generation_route(&Impl::completions);
    routes[{"POST", "/v1/chat/completions"}] = generation_route(&Impl::chat);
    routes[{"POST", "/tokenize"}] = route(&Impl::tokenize);
    routes[{"POST", "/detokenize"}] = route(&Impl::detokenize);
    routes[{"GET", "/metrics"}] = route(&Impl::metrics_text);
  }

  // Every request the transport read whole: CORS preflights, then the route.
  void handle(const Request& req, Response& res) {
    const std::string cross_origin = allowed_cross_origin(req, guard);
    if (req.method == "OPTIONS") {
      res.status = 204;
      res.set_header("Allow", "GET, POST, OPTIONS");
      add_cors_headers(cross_origin, /*preflight=*/true, res);
      return;
    }
    auto it = routes.find({req.method == "HEAD" ? "GET" : req.method, req.path});
    if (it == routes.end())
      respond_error(
          ApiError{.status = 404, .message = fmt::format("no endpoint {} {}", req.method, req.path)}, res);
    else
      it->second(req, res);
    add_cors_headers(cross_origin, /*preflight=*/false, res);
  }

  HttpHandlers transport_handlers() {
    return HttpHandlers{
        .check_head = [this](const Request& head, bool http_11) -> std::optional<Response> {
          std::optional<ApiError> e = check_request_head(head, http_11, guard);
          if (!e) return std::nullopt;
          Response res;
          respond_error(*e, res);
          return res;
        },
        .run_inline =
            [](const Request& req) {
              return (req.method == "GET" || req.method == "HEAD") && req.path == "/health";
            },
        .handle = [this](const Request& req, Response& res) { handle(req, res); },
        .error = transport_error,
        .written =
            [this](const Request& req, int status) {
              metrics.response_written(status);
              response_done(req);
            },
    };
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
  if (options.http_threads < 0 || options.http_threads > kMaxHttpThreads)
    return make_error(ErrorCode::InvalidArgument, fmt::format("server: http_threads {} outside [0, {}]",
                                                              options.http_threads, kMaxHttpThreads));
  if (options.max_connections == 0)
    return make_error(ErrorCode::InvalidArgument, "server: max_connections must be positive");
  if (options.head_timeout.count() <= 0 || options.body_timeout.count() <= 0)
    return make_error(ErrorCode::InvalidArgument, "server: request head and body timeouts must be positive");
  if (!options.chat_template_kwargs.empty()) {
    const Json kwargs = parse_json_or_discarded(options.chat_template_kwargs);
    if (kwargs.is_discarded() || !kwargs.is_object())
      return make_error(ErrorCode::InvalidArgument, "server: --chat-template-kwargs must be a JSON object");
  }
  try {
    auto impl = std::make_unique<Impl>(options);
    Impl& s = *impl;
    s.install_routes();
    const size_t threads =
        options.http_threads > 0
            ? static_cast<size_t>(options.http_threads)
            : static_cast<size_t>(std::max(
                  16,
                  2 * (options.engine.max_running > 0 ? options.engine.max_running : kDefaultSequences) + 8));
    auto http = HttpTransport::start(HttpTransportOptions{.host = options.host,
                                                          .port = options.port,
                                                          .max_body_bytes = options.max_body_bytes,
                                                          .head_timeout = options.head_timeout,
                                                          .body_timeout = options.body_timeout,
                                                          .max_connections = options.max_connections,
                                                          .workers = threads},
                                     s.transport_handlers());
    if (!http) return http.error();
    s.http = std::move(*http);
    s.port = s.http->port();
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
  // Cancelled first, so that streams end and handlers return.
  impl_->inflight.cancel_all();
  {
    std::lock_guard lk(impl_->waiting_mu);
    impl_->waiting_stopped = true;
    for (Inflight* w : impl_->waiting) w->cancel_all();
  }
  {
    // What was cancelled writes its end first (bounded), so that only idle connections are cut.
    std::unique_lock lk(impl_->mu);
    impl_->changed.wait_for(lk, std::chrono::seconds(1), [&] { return impl_->active.empty(); });
  }
  if (impl_->http) impl_->http->stop();
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
