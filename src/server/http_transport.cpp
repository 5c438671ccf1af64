#include "server/http_transport.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "server/http_beast.h"

namespace glass::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// After a request whose body was this large, free memory is returned to the system: a parsed JSON
// body costs many times its size in small blocks, which malloc's per-thread arenas would otherwise
// keep at their peak.
constexpr size_t kTrimAfterBytes = size_t{1} << 20;
// What a refused connection's unread bytes may cost before it is closed anyway (a lingering close
// lets the client read the refusal instead of a reset).
constexpr size_t kLingerBytes = size_t{16} << 20;
constexpr auto kLingerTime = std::chrono::seconds(2);
// Descriptors kept free of connections for the rest of the process (model files, logs).
constexpr size_t kReservedFds = 128;

// Handlers that may block (tokenizing, waiting for the engine, streaming) run here.
class WorkerPool {
 public:
  explicit WorkerPool(size_t n) {
    for (size_t i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
  }
  ~WorkerPool() { stop(); }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False once stopped (the task does not run).
  bool post(std::function<void()> f) {
    {
      std::lock_guard lk(mu_);
      if (stopping_) return false;
      tasks_.push_back(std::move(f));
    }
    cv_.notify_one();
    return true;
  }

  // Runs what was queued, then joins.
  void stop() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        f = std::move(tasks_.front());
        tasks_.pop_front();
      }
      f();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Raises the soft descriptor limit toward `want` (as far as the hard limit allows); returns the limit.
size_t raise_fd_limit(size_t want) {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) return 1024;
  if (l.rlim_cur != RLIM_INFINITY && l.rlim_cur < want) {
    rlimit raised = l;
    raised.rlim_cur = l.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(l.rlim_max, want);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) l = raised;
  }
  return l.rlim_cur == RLIM_INFINITY ? want : static_cast<size_t>(l.rlim_cur);
}

}  // namespace

class Connection;

struct HttpTransport::Impl {
  HttpTransportOptions opt;
  HttpHandlers h;
  int port = 0;
  size_t max_connections = 0;
  std::atomic<bool> stopping{false};
  std::atomic<size_t> open{0};
  std::atomic<size_t> large_in_flight{0};  // requests with bodies past kTrimAfterBytes being handled
  std::mutex conns_mu;
  std::unordered_map<const Connection*, std::weak_ptr<Connection>> conns;
  std::mutex stop_mu;
  bool stopped = false;
  std::unique_ptr<WorkerPool> workers;
  // "timeout=S": how long an idle keep-alive connection waits for its next request (the head deadline).
  std::string keep_alive_value;
  // Declared after what connections reach in their destructors, so destroyed before it.
  net::io_context ioc{1};
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{ioc};
  net::steady_timer accept_retry{ioc};
  std::thread io_thread;

  void do_accept();
  void refuse_busy(tcp::socket s);
};

// One client connection: reads one request at a time (head, then body, each under its deadline),
// hands it to a handler, writes the response, and reads the next. Everything touching the socket runs
// on the connection's strand; worker threads reach it through blocking posts.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket s, HttpTransport::Impl* t) : stream_(std::move(s)), t_(t) {
    buffer_.max_size(t_->opt.max_header_bytes + 8192);
    ++t_->open;
  }
  ~Connection() {
    --t_->open;
    std::lock_guard lk(t_->conns_mu);
    t_->conns.erase(this);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_head(); });
  }

  // From any thread: ends the connection where it is (a handler's writes fail from now on).
  void close() {
    net::post(stream_.get_executor(), [self = shared_from_this()] { self->close_now(); });
  }

  // From a worker: runs `op(done)` on the strand under the write deadline and waits for done(ok).
  template <class Op>
  bool blocking_write(Op op) {
    std::promise<bool> p;
    std::future<bool> f = p.get_future();
    net::post(stream_.get_executor(), [&p, &op, self = shared_from_this()] {
      if (self->closed_) return p.set_value(false);
      self->stream_.expires_after(self->t_->opt.write_timeout);
      op([&p](const beast::error_code& ec, size_t) { p.set_value(!ec); });
    });
    return f.get();
  }

 private:
  class StreamSink;

  void read_head() {
    if (closed_ || t_->stopping) return close_now();
    req_.reset();  // a refusal before the next head is read answers no earlier request
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(t_->opt.max_header_bytes));
    parser_->body_limit(t_->opt.max_body_bytes);
    stream_.expires_after(t_->opt.head_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_head(ec); });
  }

  void on_head(beast::error_code ec) {
    if (ec) return fail_read(ec);
    const auto& m = parser_->get();
    req_ = beast_http::request_from_head(m);
    http_11_ = m.version() >= 11;
    keep_alive_ = m.keep_alive();
    std::optional<HttpResponse> refusal;
    try {
      refusal = t_->h.check_head(*req_, http_11_);
    } catch (...) {
      refusal = t_->h.error(500, "internal error while reading the request head");
    }
    if (refusal) {
      keep_alive_ = false;
      return write_response(std::move(*refusal), /*handled=*/false);
    }
    if (parser_->is_done()) return on_body({});
    stream_.expires_after(t_->opt.body_timeout);
    if (beast::iequals(m[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      return net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                              [self = shared_from_this()](beast::error_code e, size_t) {
                                if (e) return self->close_now();
                                self->read_body();
                              });
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (ec) return fail_read(ec);
    stream_.expires_never();
    req_->body = std::move(parser_->get().body());
    if (req_->body.size() >= kTrimAfterBytes) {
      large_ = true;
      ++t_->large_in_flight;
    }
    parser_.reset();
    dispatch();
  }

  void fail_read(const beast::error_code& ec) {
    keep_alive_ = false;
    // A malformed request is answered; a client that left, went quiet past a deadline (the stream
    // closed the socket then) or sent nothing more is not.
    switch (beast_http::read_error_status(ec)) {
      case 413:
        return write_response(
            t_->h.error(413, fmt::format("the request body is larger than {} bytes", t_->opt.max_body_bytes)),
            false);
      case 431:
        return write_response(t_->h.error(431, fmt::format("the request head is larger than {} bytes",
                                                           t_->opt.max_header_bytes)),
                              false);
      case 400:
        return write_response(t_->h.error(400, fmt::format("malformed HTTP request: {}", ec.message())),
                              false);
      default:
        close_now();
    }
  }

  void dispatch() {
    bool run_inline = false;
    try {
      run_inline = t_->h.run_inline(*req_);
    } catch (...) {
    }
    if (run_inline) {
      HttpResponse res;
      handle(*req_, res);
      release_body(*req_);
      return finish(std::move(res));
    }
    start_watch();
    if (!t_->workers->post([self = shared_from_this()] { self->run_handler(); })) {
      release_body(*req_);
      close_now();
    }
  }

  // The request's body is done with: freed, and memory returned to the system once no large request
  // is left (one still parsing would only grow the heap again).
  void release_body(HttpRequest& req) {
    std::string().swap(req.body);
    if (!large_) return;
    large_ = false;
    if (--t_->large_in_flight == 0) malloc_trim(0);
  }

  void handle(const HttpRequest& req, HttpResponse& res) {
    try {
      t_->h.handle(req, res);
    } catch (const std::exception& e) {
      res = t_->h.error(500, fmt::format("internal error: {}", e.what()));
    } catch (...) {
      res = t_->h.error(500, "internal error");
    }
  }

  // On a worker: the handler, then its stream if it has one.
  void run_handler() {
    std::shared_ptr<HttpRequest> req = req_;  // the strand does not touch req_ until finish()
    HttpResponse res;
    handle(*req, res);
    release_body(*req);
    if (!res.provider) {
      net::post(stream_.get_executor(), [self = shared_from_this(), res = std::move(res)]() mutable {
        self->finish(std::move(res));
      });
      return;
    }
    const bool ended = stream(res);
    if (res.releaser) {
      try {
        res.releaser(ended);
      } catch (...) {
      }
    }
    const int status = res.status;
    net::post(stream_.get_executor(), [self = shared_from_this(), status, ended] {
      self->stop_watch();
      self->t_->h.written(*self->req_, status);
      if (!ended || !self->keep_alive_) return self->close_now();
      self->read_head();
    });
  }

  // Runs the provider until it ends the stream (true) or gives up (false).
  bool stream(HttpResponse& res);

  void finish(HttpResponse res) { write_response(std::move(res), /*handled=*/true); }

  void write_response(HttpResponse res, bool handled) {
    if (res.get_header_value("Connection") == "close") keep_alive_ = false;
    auto msg = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(res.status),
                                                                   http_11_ ? 11 : 10);
    for (const auto& [name, value] : res.headers)
      if (!beast::iequals(name, "Connection")) msg->insert(name, value);
    msg->body() = std::move(res.body);
    msg->keep_alive(keep_alive_);
    if (keep_alive_) msg->set(http::field::keep_alive, t_->keep_alive_value);
    msg->prepare_payload();
    if (req_ && req_->method == "HEAD") msg->body().clear();  // the length of what GET would send, no bytes
    const int status = res.status;
    stream_.expires_after(t_->opt.write_timeout);
    http::async_write(stream_, *msg,
                      [self = shared_from_this(), msg, status, handled](beast::error_code ec, size_t) {
                        self->stop_watch();
                        if (handled) self->t_->h.written(*self->req_, status);
                        if (ec) return self->close_now();
                        if (!self->keep_alive_) return self->linger();
                        self->read_head();
                      });
  }

  // While a handler runs, the socket is watched for its client leaving: readable with nothing to read
  // is the end of the stream. Bytes waiting (a pipelined request) end the watch: the client is there.
  void start_watch() {
    watched_ = req_->watch;
    stream_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), w = watched_](
                                                            beast::error_code ec) { self->on_watch(ec, w); });
  }

  void on_watch(beast::error_code ec, const std::shared_ptr<ClientWatch>& w) {
    if (w != watched_) return;  // that request is over
    if (ec) {
      if (ec != net::error::operation_aborted) w->mark_gone();
      return;
    }
    char byte = 0;
    const ssize_t n = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return w->mark_gone();
    if (n < 0) return start_watch();
  }

  void stop_watch() {
    if (!watched_) return;
    watched_.reset();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // nothing else is pending here: the response was written
  }

  // After a refusal: stop sending, then read and drop what the client still sends for a while, so
  // that it reads the refusal rather than a reset.
  void linger() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    drain();
  }

  void drain() {
    if (closed_ || lingered_ >= kLingerBytes) return close_now();
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(8192),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) return self->close_now();
                              self->lingered_ += n;
                              self->drain();
                            });
  }

  void close_now() {
    if (closed_) return;
    closed_ = true;
    if (watched_) watched_->mark_gone();
    watched_.reset();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  HttpTransport::Impl* t_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<HttpRequest> req_;
  std::shared_ptr<ClientWatch> watched_;
  bool http_11_ = true;
  bool keep_alive_ = true;
  bool closed_ = false;
  bool large_ = false;  // the request being handled counts in large_in_flight
  size_t lingered_ = 0;
};

// A streamed response's writes, from the worker running its provider: the head with the first
// write, each write as one chunk, done() as the last chunk.
class Connection::StreamSink final : public DataSink {
 public:
  StreamSink(Connection& c, const HttpResponse& res) : c_(c), res_(res) {}

  bool write(const char* data, size_t size) override {
    if (!ok_ || done_) return false;
    if (size == 0) return true;  // an empty chunk would end the stream
    if (!send_head()) return false;
    ok_ = c_.blocking_write([this, data, size](auto done) {
      if (c_.http_11_)
        net::async_write(c_.stream_, http::make_chunk(net::const_buffer(data, size)), std::move(done));
      else  // HTTP/1.0 knows no chunks: the body runs to the connection's close
        net::async_write(c_.stream_, net::const_buffer(data, size), std::move(done));
    });
    return ok_;
  }

  void done() override {
    if (!ok_ || done_ || !send_head()) return;
    if (c_.http_11_)
      ok_ = c_.blocking_write(
          [this](auto done) { net::async_write(c_.stream_, http::make_chunk_last(), std::move(done)); });
    done_ = ok_;
  }

  bool ended() const { return done_; }

 private:
  bool send_head() {
    if (head_sent_) return ok_;
    head_sent_ = true;
    http::response<http::empty_body> head(static_cast<http::status>(res_.status), c_.http_11_ ? 11 : 10);
    for (const auto& [name, value] : res_.headers)
      if (!beast::iequals(name, "Connection")) head.insert(name, value);
    head.keep_alive(c_.keep_alive_);
    if (c_.keep_alive_) head.set(http::field::keep_alive, c_.t_->keep_alive_value);
    if (c_.http_11_) head.chunked(true);
    http::response_serializer<http::empty_body> sr(head);
    ok_ = c_.blocking_write(
        [this, &sr](auto done) { http::async_write_header(c_.stream_, sr, std::move(done)); });
    return ok_;
  }

  Connection& c_;
  const HttpResponse& res_;
  bool head_sent_ = false;
  bool ok_ = true;
  bool done_ = false;
};

bool Connection::stream(HttpResponse& res) {
  if (!http_11_) keep_alive_ = false;  // chunked needs HTTP/1.1; a 1.0 client reads to the close
  StreamSink sink(*this, res);
  try {
    while (!sink.ended())
      if (!res.provider(sink)) return false;
  } catch (...) {
    return false;
  }
  return true;
}

void HttpTransport::Impl::do_accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
    if (stopping) return;
    if (ec) {
      if (ec == net::error::operation_aborted) return;
      // Out of descriptors or memory: try again shortly instead of spinning.
      accept_retry.expires_after(std::chrono::milliseconds(50));
      accept_retry.async_wait([this](beast::error_code e) {
        if (!e && !stopping) do_accept();
      });
      return;
    }
    beast::error_code ignored;
    s.set_option(tcp::no_delay(true), ignored);  // streamed events are small writes: send each at once
    if (open.load() >= max_connections) {
      refuse_busy(std::move(s));
    } else {
      auto c = std::make_shared<Connection>(std::move(s), this);
      {
        std::lock_guard lk(conns_mu);
        conns.emplace(c.get(), c);
      }
      c->start();
    }
    do_accept();
  });
}

void HttpTransport::Impl::refuse_busy(tcp::socket s) {
  static const std::string kBusy = [] {
    const std::string body =
        R"({"error":{"message":"the server has too many open connections; retry shortly","type":"unavailable_error","param":null,"code":null}})";
    return fmt::format(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
        "Retry-After: 1\r\nConnection: close\r\n\r\n{}",
        body.size(), body);
  }();
  auto sock = std::make_shared<tcp::socket>(std::move(s));
  // Small enough for the socket's send buffer: the write completes at once, read or not.
  net::async_write(*sock, net::buffer(kBusy), [sock](beast::error_code, size_t) {
    beast::error_code ignored;
    sock->shutdown(tcp::socket::shutdown_send, ignored);
    sock->close(ignored);
  });
}

HttpTransport::HttpTransport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpTransport::~HttpTransport() { stop(); }

Result<std::unique_ptr<HttpTransport>> HttpTransport::start(const HttpTransportOptions& options,
                                                            HttpHandlers handlers) {
  auto impl = std::make_unique<Impl>();
  Impl& t = *impl;
  t.opt = options;
  t.h = std::move(handlers);
  t.keep_alive_value = fmt::format(
      "timeout={}",
      std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(options.head_timeout).count()));
  const size_t fds = raise_fd_limit(options.max_connections + kReservedFds + options.workers);
  // Fixed malloc thresholds: glibc's dynamic ones rise to the largest block freed (a request body),
  // after which each worker's arena keeps up to twice that at its top, which malloc_trim does not
  // return for arenas other than the main one (9 -> 11..45 MiB after 32 bodies of 7 MB, 8 at a time;
  // with these, 11.4 every time). Measured not to change the engine's speed (pp512 / tg64 alike).
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kTrimAfterBytes));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimAfterBytes));
  t.max_connections = std::max<size_t>(
      1, std::min(options.max_connections, fds > 2 * kReservedFds ? fds - kReservedFds : fds / 2));
  const auto cannot_listen = [&](const std::string& why) {
    return make_error(ErrorCode::Io,
                      fmt::format("server: cannot listen on {}:{} ({})", options.host, options.port, why));
  };
  try {
    beast::error_code ec;
    tcp::resolver resolver(t.ioc);
    const auto found = resolver.resolve(options.host, std::to_string(options.port),
                                        tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || found.empty()) return cannot_listen(ec ? ec.message() : "no such address");
    const tcp::endpoint at = found.begin()->endpoint();
    t.acceptor.open(at.protocol(), ec);
    if (!ec) t.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) t.acceptor.bind(at, ec);
    if (!ec) t.acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return cannot_listen(fmt::format("{}; in use, or not an address of this machine?", ec.message()));
    t.port = t.acceptor.local_endpoint().port();
    t.workers = std::make_unique<WorkerPool>(std::max<size_t>(1, options.workers));
    t.do_accept();
    t.io_thread = std::thread([p = &t] {
      for (;;) {
        try {
          p->ioc.run();
          return;
        } catch (...) {  // a handler's exception must not end the server's I/O
        }
      }
    });
    return std::unique_ptr<HttpTransport>(new HttpTransport(std::move(impl)));
  } catch (const std::exception& e) {
    return cannot_listen(e.what());
  }
}

int HttpTransport::port() const { return impl_->port; }

size_t HttpTransport::connections() const { return impl_->open.load(); }

void HttpTransport::stop() {
  Impl& t = *impl_;
  std::lock_guard stopping(t.stop_mu);
  if (t.stopped) return;
  t.stopped = true;
  t.stopping = true;
  net::post(t.ioc, [p = &t] {
    beast::error_code ignored;
    p->acceptor.close(ignored);
    p->accept_retry.cancel();
  });
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lk(t.conns_mu);
    for (auto& [key, weak] : t.conns)
      if (auto c = weak.lock()) open.push_back(std::move(c));
  }
  for (auto& c : open) c->close();
  open.clear();
  // Handlers still running end now (their writes fail); the I/O thread serves their last posts.
  if (t.workers) t.workers->stop();
  t.work.reset();
  if (t.io_thread.joinable()) t.io_thread.join();
}

}  // namespace glass::server
