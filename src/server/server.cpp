#include "server/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>

#include "server/generation.h"
#include "server/metrics.h"
#include "server/openai_request.h"

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
  std::shared_ptr<Served> served;  // null while the model loads
  bool stopped = false;

  std::shared_ptr<Served> current() const {
    std::lock_guard lk(mu);
    return served;
  }

  using ServedHandler = void (Impl::*)(const std::shared_ptr<Served>&, const Request&, Response&);

  // The checks every endpoint but /health makes: the key (once the body is read, so that a refused
  // request leaves a keep-alive connection readable), then the model being loaded.
  httplib::Server::Handler route(ServedHandler h) {
    return [this, h](const Request& req, Response& res) {
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
      (this->*h)(s, req, res);
    };
  }

  GenerationContext context(const std::shared_ptr<Served>& s) {
    return GenerationContext{.served = s, .metrics = &metrics, .inflight = &inflight};
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
    respond_generation(context(s), Endpoint::Completion, std::move(ids), std::move(r.fields), "prompt", res);
  }

  void chat(const std::shared_ptr<Served>& s, const Request& req, Response& res) {
    ChatRequest r;
    if (auto e = parse_chat_request(req.body, s->limits, r)) return respond_error(*e, res);
    if (auto e = check_model(*s, r.fields.model)) return respond_error(*e, res);
    std::vector<int32_t> ids;
    if (auto e = chat_prompt(*s->model, r.messages, r.tools_json, ids)) return respond_error(*e, res);
    // Read back only what the prompt offered, in the syntax the template taught.
    const ToolFamily tools = r.tools_json.empty() ? ToolFamily::None : tool_family(s->model->chat_template());
    respond_generation(context(s), Endpoint::Chat, std::move(ids), std::move(r.fields), "messages", res,
                       tools);
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
    http.Get("/health", [this](const Request&, Response& res) {
      const bool ready = current() != nullptr;
      res.status = ready ? 200 : 503;
      respond_json({{"status", ready ? "ok" : "loading"}}, res);
    });
    http.Get("/v1/models", route(&Impl::models));
    http.Post("/v1/completions", route(&Impl::completions));
    http.Post("/v1/chat/completions", route(&Impl::chat));
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
    http.set_logger([this](const Request&, const Response& res) { metrics.response_written(res.status); });
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
    s.listener = std::thread([p = &s] { p->http.listen_after_bind(); });
    // stop() only reaches a listener that runs: wait for it, boundedly.
    for (int i = 0; i < 5000 && !s.http.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!s.http.is_running()) {
      // Unreachable in practice (the thread was not scheduled for 5 s). The thread may still start
      // and then read `s`, so it is left to it rather than destroyed under it.
      s.listener.detach();
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
  if (!model) return make_error(ErrorCode::InvalidArgument, "server: no model");
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->served) return make_error(ErrorCode::InvalidArgument, "server: a model is attached already");
    if (impl_->stopped) return make_error(ErrorCode::Cancelled, "server: stopped");
  }
  auto engine = Engine::create(model, impl_->opt.engine);
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
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  // Cancelled first, so that streams end and their connections let the workers go.
  impl_->inflight.cancel_all();
  impl_->http.stop();
  if (impl_->listener.joinable()) impl_->listener.join();
  std::shared_ptr<Served> last;
  {
    std::lock_guard lk(impl_->mu);
    last = std::move(impl_->served);
  }
  last.reset();  // the engine stops here, with no connection left to read from it
}

Engine* Server::engine() const {
  std::lock_guard lk(impl_->mu);
  return impl_->served ? impl_->served->engine.get() : nullptr;
}

}  // namespace glass::server
