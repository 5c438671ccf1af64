#include "server/http_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace glass::server {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A value quoted into an error message, cut short and without control bytes.
std::string shown(std::string_view v) {
  std::string out;
  for (char c : v.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (v.size() > 80) out += "...";
  return out;
}

size_t count_header(const HttpRequest& r, std::string_view name) {
  return static_cast<size_t>(std::count_if(r.headers.begin(), r.headers.end(),
                                           [&](const auto& h) { return same_header_name(h.first, name); }));
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_ipv4_loopback(std::string_view h) {
  // 127.a.b.c with each part a decimal 0-255.
  int parts = 0;
  size_t pos = 0;
  while (pos <= h.size()) {
    const size_t dot = std::min(h.find('.', pos), h.size());
    const std::string_view part = h.substr(pos, dot - pos);
    if (!all_digits(part) || part.size() > 3 || std::stoi(std::string(part)) > 255) return false;
    if (parts == 0 && part != "127") return false;
    ++parts;
    pos = dot + 1;
  }
  return parts == 4;
}

ApiError refused(int status, std::string message) {
  return ApiError{.status = status, .message = std::move(message)};
}

bool same_origin(std::string_view origin, const std::string& host_header) {
  return lower(origin) == "http://" + lower(host_header);
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  const std::string h = lower(host);
  return h == "localhost" || h.ends_with(".localhost") || h == "::1" || h == "[::1]" || is_ipv4_loopback(h);
}

std::optional<std::string> host_of(std::string_view value) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  std::string_view host = value;
  std::string_view port;
  if (value.front() == '[') {
    const size_t close = value.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    host = value.substr(0, close + 1);
    const std::string_view rest = value.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return std::nullopt;
      port = rest.substr(1);
    }
  } else if (const size_t colon = value.find(':'); colon != std::string_view::npos) {
    host = value.substr(0, colon);
    port = value.substr(colon + 1);
    if (port.find(':') != std::string_view::npos) return std::nullopt;
  }
  if (host.empty()) return std::nullopt;
  if (!port.empty() && (!all_digits(port) || port.size() > 5)) return std::nullopt;
  if (value.back() == ':') return std::nullopt;
  for (char c : host)
    if (static_cast<unsigned char>(c) <= 0x20 || c == '/' || c == '@' || c == '\\' || c == 0x7f)
      return std::nullopt;
  return lower(host);
}

std::optional<ApiError> check_request_head(const HttpRequest& head, bool http_11, const GuardOptions& o) {
  if (head.headers.size() > o.max_header_fields)
    return refused(431, fmt::format("the request has {} header fields; at most {} are accepted",
                                    head.headers.size(), o.max_header_fields));
  // Framing: a body is read as sent or in chunks, never decoded (so the body limit is what is held).
  for (const auto& [name, value] : head.headers) {
    if (same_header_name(name, "Content-Encoding") && lower(trim(value)) != "identity")
      return refused(415, fmt::format("Content-Encoding '{}' is not accepted; send the body uncompressed",
                                      shown(value)));
    if (same_header_name(name, "Transfer-Encoding") && lower(trim(value)) != "chunked")
      return refused(501,
                     fmt::format("Transfer-Encoding '{}' is not supported (only chunked)", shown(value)));
  }
  // RFC 9112 3.2: exactly one Host in HTTP/1.1.
  const size_t hosts = count_header(head, "Host");
  if (hosts > 1 || (http_11 && hosts == 0))
    return refused(
        400, hosts > 1 ? "the request has more than one Host header" : "the request has no Host header");
  const std::string host_header = head.get_header_value("Host");
  if (hosts == 1) {
    const std::optional<std::string> host = host_of(host_header);
    if (!host) return refused(400, fmt::format("malformed Host header '{}'", shown(host_header)));
    // A page on another site whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends its own name.
    if (is_loopback_host(o.bind_host) && !is_loopback_host(*host) && *host != lower(o.bind_host))
      return refused(403, fmt::format("Host '{}' is not a name of this loopback server (DNS rebinding guard; "
                                      "use localhost or 127.0.0.1)",
                                      shown(*host)));
  }
  if (count_header(head, "Origin") > 1) return refused(400, "the request has more than one Origin header");
  if (head.has_header("Origin")) {
    const std::string origin = std::string(trim(head.get_header_value("Origin")));
    if (!(hosts == 1 && same_origin(origin, host_header)) && allowed_cross_origin(head, o).empty())
      return refused(403, fmt::format("cross-origin requests from '{}' are not allowed (glass serve "
                                      "--cors-origin allows an origin)",
                                      shown(origin)));
  }
  // Bodies a browser may send cross-site without asking first (forms, text/plain) are not JSON here.
  if (head.method == "POST") {
    const std::string type = head.get_header_value("Content-Type");
    const std::string media = lower(trim(std::string_view(type).substr(0, type.find(';'))));
    if (media != "application/json")
      return refused(415, type.empty() ? "the request has no Content-Type; send the body as application/json"
                                       : fmt::format("Content-Type '{}' is not accepted; send the body as "
                                                     "application/json",
                                                     shown(type)));
  }
  return std::nullopt;
}

std::string allowed_cross_origin(const HttpRequest& req, const GuardOptions& o) {
  if (!req.has_header("Origin")) return "";
  const std::string origin = std::string(trim(req.get_header_value("Origin")));
  if (req.has_header("Host") && same_origin(origin, req.get_header_value("Host"))) return "";
  for (const std::string& allowed : o.cors_origins)
    if (allowed == "*" || lower(allowed) == lower(origin)) return origin;
  return "";
}

void add_cors_headers(const std::string& origin, bool preflight, HttpResponse& res) {
  if (origin.empty()) return;
  res.set_header("Access-Control-Allow-Origin", origin);
  res.set_header("Vary", "Origin");
  if (!preflight) return;
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
  res.set_header("Access-Control-Max-Age", "600");
}

}  // namespace glass::server
