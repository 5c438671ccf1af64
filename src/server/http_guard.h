#pragma once
// The checks a request's head must pass before its body is read or a handler runs, as pure
// functions (tested alone and fuzzed): framing glass does not accept (compressed bodies, transfer
// codings other than chunked, too many header fields), and browser exposure: a Host that is not this
// server's own on a loopback bind (DNS rebinding), an Origin that is neither the server's own nor
// allowed by --cors-origin (cross-site requests), and POST bodies that are not application/json
// (HTML forms and text/plain bodies, which a page may send without a preflight).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/http_message.h"

namespace glass::server {

struct GuardOptions {
  // The address the server listens on, as given (--host): a loopback one (127.0.0.0/8, ::1,
  // localhost) turns on the Host check.
  std::string bind_host = "127.0.0.1";
  // Origins allowed to make cross-origin requests (scheme://host[:port], as browsers send them);
  // "*" allows any. Empty: only the server's own origin.
  std::vector<std::string> cors_origins;
  size_t max_header_fields = 100;
};

// Whether `host` (an address or a name, without port) is a loopback one.
bool is_loopback_host(std::string_view host);

// The host part of a Host header value ("[::1]:8080" → "[::1]", "a:1" → "a"), lower-cased; nullopt
// when it is malformed.
std::optional<std::string> host_of(std::string_view host_header);

// The refusal of a request head (status 400, 403, 415, 431 or 501, the message naming the header),
// or nullopt. `http_11`: the request said HTTP/1.1 (Host is then required).
std::optional<ApiError> check_request_head(const HttpRequest& head, bool http_11, const GuardOptions& o);

// The Origin of `req` when it is allowed and cross-origin (the response then carries CORS headers),
// else "".
std::string allowed_cross_origin(const HttpRequest& req, const GuardOptions& o);

// Adds the CORS headers for `origin` (from allowed_cross_origin) to `res`; `preflight`: the answer to
// an OPTIONS request, which also names the methods and headers allowed.
void add_cors_headers(const std::string& origin, bool preflight, HttpResponse& res);

}  // namespace glass::server
