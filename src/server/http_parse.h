#pragma once
// Reading a request the way the transport does, from bytes at hand: Beast's parser under the
// transport's limits, the head turned into an HttpRequest, then check_request_head. The transport
// uses the same pieces on a socket (http_transport.cpp); the fuzz harness http_request drives this.
#include <cstddef>
#include <string>
#include <string_view>

#include "server/http_guard.h"
#include "server/http_message.h"

namespace glass::server {

struct HttpLimits {
  size_t max_body_bytes = size_t{8} << 20;
  size_t max_header_bytes = size_t{16} << 10;
};

struct ParsedRequest {
  bool complete = false;  // false: the bytes end before the request does
  int status = 0;         // 0: read whole and accepted; else the refusal's status (400, 403, 413, ...)
  std::string message;    // the refusal's
  HttpRequest request;    // its head, and its body once read
  bool http_11 = true;
  bool keep_alive = true;
  size_t consumed = 0;  // bytes of `bytes` the request took
};

ParsedRequest parse_request(std::string_view bytes, const HttpLimits& limits, const GuardOptions& guard);

// A request as a well-formed HTTP/1.1 (or 1.0) message with Content-Length framing: what
// parse_request reads back as the same request.
std::string serialize_request(const HttpRequest& r, bool http_11 = true);

}  // namespace glass::server
