#pragma once
// What the transport and parse_request share over Beast's types (only they include Beast).
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <memory>
#include <string>

#include "server/http_message.h"

namespace glass::server::beast_http {

namespace http = boost::beast::http;

// A request head as the server's handlers see it.
template <class Fields>
std::shared_ptr<HttpRequest> request_from_head(const http::request_header<Fields>& m) {
  auto r = std::make_shared<HttpRequest>();
  r->method = std::string(m.method_string());
  r->target = std::string(m.target());
  r->path = r->target.substr(0, r->target.find('?'));
  for (const auto& f : m) r->headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  return r;
}

// The status a read error is answered with: 413 and 431 for the limits, 400 for malformed HTTP, 0
// for what is not answered (the client left, a deadline passed, the stream ended early).
inline int read_error_status(const boost::beast::error_code& ec) {
  if (ec == http::error::body_limit) return 413;
  if (ec == http::error::header_limit) return 431;
  if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == http::error::need_more)
    return 0;
  return ec.category() == http::make_error_code(http::error::bad_method).category() ? 400 : 0;
}

}  // namespace glass::server::beast_http
