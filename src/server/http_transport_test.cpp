// HttpTransport against raw clients (loopback only, every wait bounded): strict framing, limits,
// deadlines for slow clients, pipelining, connection bounds, streamed responses and the watch that
// sees a client leave. The handlers are stubs: no model.
#include "server/http_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/http_guard.h"
#include "server/raw_http_test_support.h"

namespace glass::server {
namespace {

using namespace std::chrono_literals;
using testing::count_responses;
using testing::RawClient;
using testing::status_of;

HttpResponse text(int status, const std::string& body) {
  HttpResponse r;
  r.status = status;
  r.set_content(body, "text/plain");
  return r;
}

// "METHOD TARGET BODY-SIZE" for every request.
void echo(const HttpRequest& req, HttpResponse& res) {
  res.set_content(req.method + " " + req.target + " " + std::to_string(req.body.size()), "text/plain");
}

std::unique_ptr<HttpTransport> start(HttpTransportOptions o,
                                     std::function<void(const HttpRequest&, HttpResponse&)> handle = echo) {
  o.host = "127.0.0.1";
  o.port = 0;
  HttpHandlers h{
      .check_head = [](const HttpRequest& head, bool http_11) -> std::optional<HttpResponse> {
        if (auto e = check_request_head(head, http_11, GuardOptions{})) return text(e->status, e->message);
        return std::nullopt;
      },
      .run_inline = [](const HttpRequest& req) { return req.path == "/health"; },
      .handle = std::move(handle),
      .error = text,
      .written = [](const HttpRequest&, int) {},
  };
  auto t = HttpTransport::start(o, std::move(h));
  EXPECT_TRUE(t) << (t ? "" : t.error().message);
  return t ? std::move(*t) : nullptr;
}

std::string post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n" + extra + "\r\n" + body;
}

std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"; }

// The answer to one request sent alone on a fresh connection.
std::string exchange(int port, const std::string& bytes) {
  RawClient c(port);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.send(bytes));
  std::string out;
  c.read_until(out, "\r\n\r\n", 5s);
  c.read_all(300ms);  // the body, if any
  return out;
}

TEST(HttpTransport, AnswersAndKeepsTheConnection) {
  auto t = start({});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send(post("/a", "{}")));
  std::string out;
  ASSERT_TRUE(c.read_until(out, "POST /a 2"));
  EXPECT_EQ(status_of(out), 200);
  ASSERT_TRUE(c.send(get("/b?x=1")));
  ASSERT_TRUE(c.read_until(out, "GET /b?x=1 0"));
}

TEST(HttpTransport, ConflictingFramingIsRefused) {
  auto t = start({});
  ASSERT_TRUE(t);
  const std::string head = "POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  for (const std::string& framing : {
           std::string("Content-Length: 2\r\nContent-Length: 3\r\n"),
           std::string("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"),
           std::string("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n"),
           std::string("Content-Length: +2\r\n"),
           std::string("Content-Length: 2 2\r\n"),
           std::string("Content-Length: 0x2\r\n"),
           std::string("Content-Length: -2\r\n"),
           std::string("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
       }) {
    const std::string out = exchange(t->port(), head + framing + "\r\n{}");
    EXPECT_EQ(status_of(out), 400) << framing << "\n" << out;
  }
  // Codings glass does not decode: refused rather than passed on undecoded.
  EXPECT_EQ(status_of(exchange(t->port(), head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")), 501);
  EXPECT_EQ(status_of(exchange(t->port(), head + "Content-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}")),
            415);
  // HTTP/1.1 without Host, or with two.
  EXPECT_EQ(status_of(exchange(t->port(), "GET /a HTTP/1.1\r\n\r\n")), 400);
  EXPECT_EQ(status_of(exchange(t->port(), "GET /a HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")), 400);
  EXPECT_EQ(status_of(exchange(t->port(), "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n")),
            400);
}

TEST(HttpTransport, EqualRepeatedLengthsAreOneLength) {
  auto t = start({});
  ASSERT_TRUE(t);
  const std::string out = exchange(t->port(),
                                   "POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                   "application/json\r\nContent-Length: 2, 2\r\n\r\n{}");
  EXPECT_EQ(status_of(out), 200) << out;
  EXPECT_NE(out.find("POST /a 2"), std::string::npos) << out;
}

TEST(HttpTransport, BodyLimitHoldsForChunkedAndDeclaredBodies) {
  auto t = start({.max_body_bytes = 1000});
  ASSERT_TRUE(t);
  // Declared too large: refused from the head, before any body byte.
  EXPECT_EQ(status_of(exchange(t->port(), post("/a", std::string(1001, 'x')))), 413);
  // Chunked: counted as it arrives.
  std::string chunked =
      "POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: "
      "chunked\r\n\r\n";
  for (int i = 0; i < 3; ++i) chunked += "190\r\n" + std::string(400, 'x') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(status_of(exchange(t->port(), chunked)), 413);
  // Within the limit, chunked bodies are read whole.
  const std::string ok =
      "POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: "
      "chunked\r\n\r\n"
      "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
  const std::string out = exchange(t->port(), ok);
  EXPECT_NE(out.find("POST /a 5"), std::string::npos) << out;
}

TEST(HttpTransport, HeadLimits) {
  auto t = start({.max_header_bytes = 4096});
  ASSERT_TRUE(t);
  std::string many = "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 150; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  EXPECT_EQ(status_of(exchange(t->port(), many + "\r\n")), 431);
  const std::string big =
      "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(5000, 'y') + "\r\n\r\n";
  EXPECT_EQ(status_of(exchange(t->port(), big)), 431);
}

// HEAD: the head GET would get, its Content-Length included, and no body bytes before the next answer.
TEST(HttpTransport, HeadRequestGetsNoBody) {
  auto t = start({});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send("HEAD /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + get("/y")));
  std::string out;
  ASSERT_TRUE(c.read_until(out, "GET /y 0")) << out;
  EXPECT_NE(out.find("Content-Length: 9\r\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("HEAD /x 0"), std::string::npos) << out;
  EXPECT_EQ(count_responses(out), 2);
}

TEST(HttpTransport, PipelinedRequestsAreAnsweredInOrder) {
  auto t = start({});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send(post("/first", "{}") + get("/second") + post("/third", "[1]")));
  std::string out;
  ASSERT_TRUE(c.read_until(out, "POST /third 3")) << out;
  EXPECT_EQ(count_responses(out), 3);
  const size_t a = out.find("POST /first 2"), b = out.find("GET /second 0"), d = out.find("POST /third 3");
  EXPECT_LT(a, b);
  EXPECT_LT(b, d);
}

TEST(HttpTransport, ExpectContinueGetsAnInterimResponse) {
  auto t = start({});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  const std::string head =
      "POST /a HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\n"
      "Expect: 100-continue\r\n\r\n";
  ASSERT_TRUE(c.send(head));
  std::string out;
  ASSERT_TRUE(c.read_until(out, "100 Continue"));
  ASSERT_TRUE(c.send("[12]"));
  ASSERT_TRUE(c.read_until(out, "POST /a 4")) << out;
}

// A client that keeps sending a byte now and then never finishes its head: the head's deadline ends
// it however it paces them.
TEST(HttpTransport, SlowHeadIsCutAtItsDeadline) {
  auto t = start({.head_timeout = 400ms});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  const std::string head = "GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  const auto begin = std::chrono::steady_clock::now();
  bool closed = false;
  for (int i = 0; i < 40 && !closed; ++i) {  // at most ~4 s
    if (!c.send(i < static_cast<int>(head.size()) ? head.substr(i, 1) : "y")) break;
    closed = c.closed_within(100ms);
  }
  EXPECT_TRUE(closed) << "the slow head was not cut";
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 3s);
}

TEST(HttpTransport, SlowBodyIsCutAtItsDeadline) {
  auto t = start({.body_timeout = 400ms});
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send(post("/a", std::string(100, 'x')).substr(0, 120)));
  const auto begin = std::chrono::steady_clock::now();
  bool closed = false;
  for (int i = 0; i < 40 && !closed; ++i) {
    if (!c.send("x")) break;
    closed = c.closed_within(100ms);
  }
  EXPECT_TRUE(closed) << "the slow body was not cut";
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 3s);
}

// Connections that sit in their head take no worker: requests on other connections are answered
// meanwhile, by the workers and inline alike.
TEST(HttpTransport, SlowClientsDoNotStopOthers) {
  auto t = start({.workers = 2});
  ASSERT_TRUE(t);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 200; ++i) {
    slow.push_back(std::make_unique<RawClient>(t->port()));
    ASSERT_TRUE(slow.back()->ok());
    ASSERT_TRUE(slow.back()->send("GET /a HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(exchange(t->port(), get("/health")).find("GET /health 0"), std::string::npos);
    EXPECT_NE(exchange(t->port(), post("/v1", "{}")).find("POST /v1 2"), std::string::npos);
  }
  EXPECT_GE(t->connections(), 200u);
}

TEST(HttpTransport, ConnectionsBeyondTheBoundGet503) {
  auto t = start({.max_connections = 4});
  ASSERT_TRUE(t);
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(std::make_unique<RawClient>(t->port()));
    ASSERT_TRUE(idle.back()->ok());
  }
  // The fourth is counted once accepted: wait until it is (bounded).
  for (int i = 0; i < 200 && t->connections() < 4; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_EQ(t->connections(), 4u);
  const std::string out = exchange(t->port(), get("/a"));
  EXPECT_EQ(status_of(out), 503) << out;
  idle.clear();
  for (int i = 0; i < 200 && t->connections() > 0; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(status_of(exchange(t->port(), get("/a"))), 200);
}

TEST(HttpTransport, StreamedResponseIsChunkedAndKeepsTheConnection) {
  auto t = start({}, [](const HttpRequest& req, HttpResponse& res) {
    if (req.path != "/stream") return echo(req, res);
    auto n = std::make_shared<int>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [n](DataSink& sink) {
          if (*n == 3) {
            sink.done();
            return true;
          }
          const std::string piece = "data: " + std::to_string((*n)++) + "\n\n";
          return sink.write(piece.data(), piece.size());
        },
        nullptr);
  });
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send(get("/stream")));
  std::string out;
  ASSERT_TRUE(c.read_until(out, "0\r\n\r\n")) << out;
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("9\r\ndata: 2\n\n\r\n"), std::string::npos) << out;
  ASSERT_TRUE(c.send(get("/after")));
  ASSERT_TRUE(c.read_until(out, "GET /after 0"));
}

// HTTP/1.0 has no chunked coding: a stream's body is its bytes up to the connection's close.
TEST(HttpTransport, StreamToAnHttp10ClientRunsToTheClose) {
  auto t = start({}, [](const HttpRequest&, HttpResponse& res) {
    auto n = std::make_shared<int>(0);
    res.set_chunked_content_provider(
        "text/event-stream",
        [n](DataSink& sink) {
          if (*n == 2) {
            sink.done();
            return true;
          }
          ++*n;
          return sink.write("data: x\n\n", 9);
        },
        nullptr);
  });
  ASSERT_TRUE(t);
  RawClient c(t->port());
  ASSERT_TRUE(c.send("GET /stream HTTP/1.0\r\n\r\n"));
  const std::string out = c.read_all(3s);
  EXPECT_EQ(out.rfind("HTTP/1.0 200", 0), 0u) << out;
  EXPECT_EQ(out.find("chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n\r\ndata: x\n\ndata: x\n\n"), std::string::npos) << out;
}

// A handler that waits is told when its client leaves, by the connection itself.
TEST(HttpTransport, ClientLeavingIsSeenWhileTheHandlerRuns) {
  std::atomic<bool> seen{false};
  auto t = start({}, [&](const HttpRequest& req, HttpResponse& res) {
    std::atomic<bool> told{false};
    req.watch->on_gone([&told] { told = true; });
    for (int i = 0; i < 500 && !told; ++i) std::this_thread::sleep_for(10ms);
    req.watch->clear();
    seen = told.load();
    echo(req, res);
  });
  ASSERT_TRUE(t);
  {
    RawClient c(t->port());
    ASSERT_TRUE(c.send(post("/wait", "{}")));
    std::this_thread::sleep_for(50ms);
  }  // closed
  for (int i = 0; i < 500 && !seen; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(seen);
}

TEST(HttpTransport, StopEndsIdleAndStreamingConnections) {
  std::atomic<bool> streaming{false};
  auto t = start({}, [&](const HttpRequest&, HttpResponse& res) {
    res.set_chunked_content_provider(
        "text/event-stream",
        [&](DataSink& sink) {
          streaming = true;
          std::this_thread::sleep_for(10ms);
          return sink.write("data: x\n\n", 9);
        },
        nullptr);
  });
  ASSERT_TRUE(t);
  RawClient idle(t->port());
  RawClient streamed(t->port());
  ASSERT_TRUE(streamed.send(get("/stream")));
  for (int i = 0; i < 500 && !streaming; ++i) std::this_thread::sleep_for(5ms);
  const auto begin = std::chrono::steady_clock::now();
  t->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 2s);
  EXPECT_TRUE(idle.closed_within(2s));
  EXPECT_TRUE(streamed.closed_within(2s));
}

TEST(HttpTransport, BindErrorsNameTheAddress) {
  HttpHandlers h{.check_head = [](const HttpRequest&, bool) { return std::optional<HttpResponse>(); },
                 .run_inline = [](const HttpRequest&) { return false; },
                 .handle = echo,
                 .error = text,
                 .written = [](const HttpRequest&, int) {}};
  auto t = HttpTransport::start({.host = "203.0.113.7", .port = 0}, h);
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("203.0.113.7"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace glass::server
