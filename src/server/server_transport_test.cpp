// The server as hostile clients and browsers meet it (loopback only, bounded): cross-site pages,
// DNS rebinding, bodies that are not JSON, compressed and oversized bodies, slow clients beside real
// generation requests.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/raw_http_test_support.h"
#include "server/server_test_support.h"

namespace glass::server::test_http {
namespace {

using testing::RawClient;
using testing::status_of;

const Json kCompletion = {{"prompt", "Once upon a time"}, {"max_tokens", 4}, {"temperature", 0}};

TEST(ServerTransport, PagesOnOtherOriginsAreRefused) {
  auto s = start();
  ASSERT_TRUE(s);
  const Reply refused = post(*s, "/v1/completions", kCompletion, {{"Origin", "https://evil.example"}});
  EXPECT_EQ(refused.status, 403) << refused.body;
  expect_error(refused, 403, "", "cross-origin POST");
  // The server's own origin, and no Origin at all (curl, SDKs), are served.
  const Reply own =
      post(*s, "/v1/completions", kCompletion, {{"Origin", "http://127.0.0.1:" + std::to_string(s->port())}});
  EXPECT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(own.headers.count("Access-Control-Allow-Origin"), 0u);
}

TEST(ServerTransport, AllowedOriginsGetCorsHeadersAndPreflights) {
  ServerOptions o;
  o.cors_origins = {"https://app.example"};
  auto s = start(o);
  ASSERT_TRUE(s);
  const Reply ok = post(*s, "/v1/completions", kCompletion, {{"Origin", "https://app.example"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  ASSERT_EQ(ok.headers.count("Access-Control-Allow-Origin"), 1u);
  EXPECT_EQ(ok.headers.find("Access-Control-Allow-Origin")->second, "https://app.example");
  EXPECT_EQ(post(*s, "/v1/completions", kCompletion, {{"Origin", "https://other.example"}}).status, 403);

  auto c = client(*s);
  auto pre =
      c.Options("/v1/chat/completions", {{"Origin", "https://app.example"},
                                         {"Access-Control-Request-Method", "POST"},
                                         {"Access-Control-Request-Headers", "authorization, content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "https://app.example");
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Methods").find("POST"), std::string::npos);
  EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
}

TEST(ServerTransport, RebindingHostsAndNonJsonBodiesAreRefused) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string port = std::to_string(s->port());
  RawClient rebound(s->port());
  ASSERT_TRUE(rebound.send("GET /v1/models HTTP/1.1\r\nHost: attacker.example:" + port + "\r\n\r\n"));
  EXPECT_EQ(status_of(rebound.read_all(2s)), 403);

  RawClient by_name(s->port());
  ASSERT_TRUE(
      by_name.send("GET /v1/models HTTP/1.1\r\nHost: localhost:" + port + "\r\nConnection: close\r\n\r\n"));
  EXPECT_EQ(status_of(by_name.read_all(2s)), 200);

  auto c = client(*s);
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded"}) {
    const Reply r = to_reply(c.Post("/v1/completions", kCompletion.dump(), type), type);
    EXPECT_EQ(r.status, 415) << type;
    expect_error(r, 415, "", type);
  }
}

// What an inflating body would become is never held: compressed bodies are refused from the head.
TEST(ServerTransport, CompressedAndOversizedBodiesAreRefusedEarly) {
  ServerOptions o;
  o.max_body_bytes = 1 << 20;
  auto s = start(o);
  ASSERT_TRUE(s);
  RawClient gz(s->port());
  ASSERT_TRUE(
      gz.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              "Content-Encoding: gzip\r\nContent-Length: 400000\r\n\r\n"));
  EXPECT_EQ(status_of(gz.read_all(2s)), 415);

  // 2 MiB in chunks against a 1 MiB limit: refused once the limit is crossed.
  RawClient chunked(s->port());
  ASSERT_TRUE(
      chunked.send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Transfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  for (int i = 0; i < 32; ++i)
    if (!chunked.send(chunk)) break;  // the server may close once it has refused
  EXPECT_EQ(status_of(chunked.read_all(2s)), 413);
  // The server goes on serving.
  EXPECT_EQ(post(*s, "/v1/completions", kCompletion).status, 200);
}

TEST(ServerTransport, SlowClientsLeaveGenerationAndHealthServed) {
  auto s = start();
  ASSERT_TRUE(s);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 100; ++i) {
    slow.push_back(std::make_unique<RawClient>(s->port()));
    ASSERT_TRUE(slow.back()->ok());
    ASSERT_TRUE(slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le"));
  }
  EXPECT_EQ(get(*s, "/health").status, 200);
  const Reply r = post(*s, "/v1/completions", kCompletion);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["finish_reason"], "length");
}

// A bounded soak: 24 streams, 8 at a time, every third hanging up after its first event, beside 50
// slow clients, with /health polled throughout. Every stream that stays reads its [DONE], /health
// always answers 200, and afterwards the engine holds nothing and its invariants hold.
TEST(ServerTransport, SoakWithDisconnectsAndSlowClients) {
  ServerOptions o;
  o.engine.max_running = 8;
  auto s = start(o);
  ASSERT_TRUE(s);
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 50; ++i) {
    slow.push_back(std::make_unique<RawClient>(s->port()));
    ASSERT_TRUE(slow.back()->send("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  }
  const std::string body = streamed_completion_request(120).body;
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::atomic<int> finished{0}, hung_up{0}, health_failures{0}, health_probes{0};
  std::atomic<bool> over{false};
  std::thread health([&] {
    for (int i = 0; i < 3000 && !over; ++i) {
      ++health_probes;
      if (get(*s, "/health").status != 200) ++health_failures;
      std::this_thread::sleep_for(10ms);
    }
  });
  std::vector<std::thread> streams;
  for (int t = 0; t < 8; ++t)
    streams.emplace_back([&, t] {
      for (int k = 0; k < 3; ++k) {
        RawClient c(s->port());
        if (!c.send(request)) continue;
        std::string out;
        if ((t + k) % 3 == 0) {
          if (c.read_until(out, "data: ", 10s)) ++hung_up;
          continue;  // closed mid-stream
        }
        if (c.read_until(out, "data: [DONE]", 20s)) ++finished;
      }
    });
  for (std::thread& t : streams) t.join();
  over = true;
  health.join();
  EXPECT_EQ(finished + hung_up, 24);
  EXPECT_EQ(hung_up, 8);
  EXPECT_GT(health_probes, 0);
  EXPECT_EQ(health_failures, 0);
  Engine& engine = *s->engine();
  EXPECT_TRUE(eventually([&] {
    const auto st = engine.stats();
    return st.running == 0 && st.queued == 0 && st.blocks_used == 0;
  }));
  EXPECT_TRUE(engine.check_invariants().ok());
}

}  // namespace
}  // namespace glass::server::test_http
