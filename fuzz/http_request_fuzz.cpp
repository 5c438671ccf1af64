// glass serve's HTTP request reading, without the network: raw bytes as a connection delivers them,
// read request after request the way a keep-alive connection is (parse_request: Beast's parser under
// the transport's limits, then check_request_head with a loopback bind and one allowed origin).
// Checked beyond "no crash, no leak": what was consumed lies within the input, every refusal is a
// 4xx/5xx with a message, and an accepted request written out again (serialize_request) reads back
// as the same request.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/http_parse.h"

namespace {

using namespace glass::server;

void check(bool ok) {
  if (!ok) std::abort();
}

bool same_request(const HttpRequest& a, const HttpRequest& b) {
  if (a.method != b.method || a.target != b.target || a.path != b.path || a.body != b.body) return false;
  // The framing fields are rewritten (Content-Length from the body); the rest keep their order.
  auto fields = [](const HttpRequest& r) {
    HttpHeaders out;
    for (const auto& h : r.headers)
      if (!same_header_name(h.first, "Content-Length") && !same_header_name(h.first, "Transfer-Encoding"))
        out.push_back(h);
    return out;
  };
  return fields(a) == fields(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const HttpLimits limits{.max_body_bytes = 4096, .max_header_bytes = 2048};
  const GuardOptions guard{.bind_host = "127.0.0.1", .cors_origins = {"https://app.example"}};
  size_t at = 0;
  for (int n = 0; n < 8 && at < all.size(); ++n) {
    const std::string_view rest = all.substr(at);
    const ParsedRequest p = parse_request(rest, limits, guard);
    check(p.consumed <= rest.size());
    if (!p.complete) break;
    if (p.status != 0) {
      check(p.status >= 400 && p.status < 600 && !p.message.empty());
      break;  // the transport answers and closes
    }
    check(p.request.body.size() <= limits.max_body_bytes);
    const std::string again = serialize_request(p.request, p.http_11);
    const ParsedRequest q =
        parse_request(again, HttpLimits{.max_body_bytes = 4096, .max_header_bytes = 1 << 20}, guard);
    check(q.complete && q.status == 0 && q.consumed == again.size());
    check(same_request(p.request, q.request));
    if (p.consumed == 0 || !p.keep_alive) break;
    at += p.consumed;
  }
  return 0;
}
