// check_request_head and the CORS helpers as pure functions: what a browser, a rebinding page or an
// odd client sends, and what glass answers.
#include "server/http_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace glass::server {
namespace {

HttpRequest request(std::string method, HttpHeaders headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.target = r.path = "/v1/completions";
  r.headers = std::move(headers);
  return r;
}

int status(const HttpRequest& r, const GuardOptions& o = {}) {
  auto e = check_request_head(r, /*http_11=*/true, o);
  return e ? e->status : 0;
}

TEST(HttpGuard, LoopbackNames) {
  for (const char* h : {"localhost", "LOCALHOST", "a.localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"})
    EXPECT_TRUE(is_loopback_host(h)) << h;
  for (const char* h : {"127.0.0.1.evil.com", "evil.com", "128.0.0.1", "127.0.0.256", "127.0.0", "0.0.0.0",
                        "localhost.evil.com", "", "[::2]"})
    EXPECT_FALSE(is_loopback_host(h)) << h;
}

TEST(HttpGuard, HostOfHeaderValue) {
  EXPECT_EQ(host_of("127.0.0.1:8080"), "127.0.0.1");
  EXPECT_EQ(host_of("LocalHost"), "localhost");
  EXPECT_EQ(host_of("[::1]:80"), "[::1]");
  EXPECT_EQ(host_of(" a.example "), "a.example");
  for (const char* bad :
       {"", ":80", "a:b", "a:80:90", "[::1", "[::1]x", "a:", "a b", "user@evil", "a/b", "a:123456"})
    EXPECT_FALSE(host_of(bad).has_value()) << bad;
}

TEST(HttpGuard, PlainJsonRequestPasses) {
  EXPECT_EQ(status(request("POST", {{"Host", "127.0.0.1:8080"}, {"Content-Type", "application/json"}})), 0);
  EXPECT_EQ(
      status(request("POST", {{"host", "localhost"}, {"content-type", "Application/JSON; charset=utf-8"}})),
      0);
  EXPECT_EQ(status(request("GET", {{"Host", "[::1]:8080"}})), 0);
}

// Bodies a page can send cross-site without a preflight are not JSON requests here.
TEST(HttpGuard, NonJsonBodiesAre415) {
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded",
                           "multipart/form-data; boundary=x", "application/jsonx", "text/json"})
    EXPECT_EQ(status(request("POST", {{"Host", "127.0.0.1"}, {"Content-Type", type}})), 415) << type;
  EXPECT_EQ(status(request("POST", {{"Host", "127.0.0.1"}})), 415);
}

TEST(HttpGuard, DnsRebindingIsRefusedOnLoopback) {
  EXPECT_EQ(status(request("GET", {{"Host", "evil.example:8080"}})), 403);
  EXPECT_EQ(status(request("GET", {{"Host", "127.0.0.1.nip.io"}})), 403);
  // Bound to another address, the Host is not glass's to judge (a proxy or DNS name in front).
  GuardOptions any{.bind_host = "0.0.0.0"};
  EXPECT_EQ(status(request("GET", {{"Host", "llm.internal:8080"}}), any), 0);
  // The bind address itself is a name of the server.
  GuardOptions named{.bind_host = "127.0.0.2"};
  EXPECT_EQ(status(request("GET", {{"Host", "127.0.0.2"}}), named), 0);
}

TEST(HttpGuard, HostIsRequiredOnceInHttp11) {
  HttpRequest none = request("GET", {});
  EXPECT_EQ(check_request_head(none, true, {})->status, 400);
  EXPECT_FALSE(check_request_head(none, /*http_11=*/false, {}).has_value());
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Host", "localhost"}})), 400);
  EXPECT_EQ(status(request("GET", {{"Host", "a b"}})), 400);
}

TEST(HttpGuard, CrossOriginNeedsAnAllowance) {
  const HttpRequest from_page = request(
      "POST",
      {{"Host", "127.0.0.1:8080"}, {"Origin", "https://evil.example"}, {"Content-Type", "application/json"}});
  EXPECT_EQ(status(from_page), 403);
  EXPECT_EQ(allowed_cross_origin(from_page, {}), "");
  // The server's own origin is not cross-origin.
  EXPECT_EQ(status(request("GET", {{"Host", "127.0.0.1:8080"}, {"Origin", "http://127.0.0.1:8080"}})), 0);
  EXPECT_EQ(status(request("GET", {{"Host", "127.0.0.1:8080"}, {"Origin", "http://127.0.0.1:9090"}})), 403);
  EXPECT_EQ(status(request("GET", {{"Host", "127.0.0.1:8080"}, {"Origin", "null"}})), 403);
  GuardOptions allow{.cors_origins = {"https://app.example"}};
  EXPECT_EQ(status(from_page, allow), 403);
  const HttpRequest from_app = request(
      "POST",
      {{"Host", "127.0.0.1:8080"}, {"Origin", "https://app.example"}, {"Content-Type", "application/json"}});
  EXPECT_EQ(status(from_app, allow), 0);
  EXPECT_EQ(allowed_cross_origin(from_app, allow), "https://app.example");
  GuardOptions any{.cors_origins = {"*"}};
  EXPECT_EQ(status(from_page, any), 0);
  EXPECT_EQ(allowed_cross_origin(from_page, any), "https://evil.example");
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Origin", "a"}, {"Origin", "b"}}), any), 400);

  HttpResponse res;
  add_cors_headers("https://app.example", /*preflight=*/true, res);
  EXPECT_EQ(res.get_header_value("access-control-allow-origin"), "https://app.example");
  EXPECT_NE(res.get_header_value("Access-Control-Allow-Headers").find("Authorization"), std::string::npos);
  HttpResponse none;
  add_cors_headers("", false, none);
  EXPECT_TRUE(none.headers.empty());
}

TEST(HttpGuard, FramingGlassDoesNotDecode) {
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Content-Encoding", "gzip"}})), 415);
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Content-Encoding", "identity"}})), 0);
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Transfer-Encoding", "gzip, chunked"}})), 501);
  EXPECT_EQ(status(request("GET", {{"Host", "localhost"}, {"Transfer-Encoding", "Chunked"}})), 0);
  HttpHeaders many = {{"Host", "localhost"}};
  for (int i = 0; i < 101; ++i) many.emplace_back("X-" + std::to_string(i), "1");
  EXPECT_EQ(status(request("GET", many)), 431);
}

TEST(HttpGuard, MessagesQuoteValuesSafely) {
  auto e = check_request_head(request("GET", {{"Host", "evil\x01" + std::string(200, 'x')}}), true, {});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message.find('\x01'), std::string::npos);
  EXPECT_LT(e->message.size(), 200u);
}

}  // namespace
}  // namespace glass::server
