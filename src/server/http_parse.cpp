#include "server/http_parse.h"

#include <fmt/format.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <sstream>

#include "server/http_beast.h"

namespace glass::server {

namespace net = boost::asio;
namespace http = boost::beast::http;

ParsedRequest parse_request(std::string_view bytes, const HttpLimits& limits, const GuardOptions& guard) {
  ParsedRequest out;
  http::request_parser<http::string_body> p;
  p.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  p.body_limit(limits.max_body_bytes);
  p.eager(true);
  bool head_checked = false;
  while (!p.is_done()) {
    boost::beast::error_code ec;
    const size_t n = p.put(net::buffer(bytes.data() + out.consumed, bytes.size() - out.consumed), ec);
    out.consumed += n;
    if (ec == http::error::need_more) return out;  // every byte at hand was offered
    if (ec) {
      out.complete = true;
      out.status = beast_http::read_error_status(ec);
      if (out.status == 0) out.status = 400;
      out.message = ec.message();
      return out;
    }
    if (p.is_header_done() && !head_checked) {
      head_checked = true;
      out.http_11 = p.get().version() >= 11;
      out.keep_alive = p.get().keep_alive();
      out.request = std::move(*beast_http::request_from_head(p.get()));
      if (auto e = check_request_head(out.request, out.http_11, guard)) {
        out.complete = true;
        out.status = e->status;
        out.message = e->message;
        return out;
      }
    }
    if (n == 0 && !p.is_done()) return out;
  }
  out.complete = true;
  out.request.body = std::move(p.get().body());
  return out;
}

std::string serialize_request(const HttpRequest& r, bool http_11) {
  http::request<http::string_body> m;
  m.method_string(r.method);
  m.target(r.target);
  m.version(http_11 ? 11 : 10);
  for (const auto& [name, value] : r.headers)
    if (!boost::beast::iequals(name, "Content-Length") && !boost::beast::iequals(name, "Transfer-Encoding"))
      m.insert(name, value);
  m.body() = r.body;
  m.prepare_payload();
  std::ostringstream os;
  os << m;
  return os.str();
}

}  // namespace glass::server
