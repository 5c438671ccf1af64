#pragma once
// A raw TCP client for transport tests: bytes exactly as a hostile or odd client sends them, and the
// server's answers read with deadlines (loopback only).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <string_view>

namespace glass::server::testing {

class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
    if (fd_ >= 0) {
      int one = 1;
      setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool ok() const { return fd_ >= 0; }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Everything until the server closes the connection or `limit` passes.
  std::string read_all(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    std::string out;
    while (read_some(out, limit)) {
    }
    return out;
  }

  // Reads until `out` holds `marker` (true), the connection ends or `limit` passes (false).
  bool read_until(std::string& out, std::string_view marker,
                  std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (out.find(marker) == std::string::npos) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !read_some(out, left)) return out.find(marker) != std::string::npos;
    }
    return true;
  }

  // Whether the server closed the connection (end of stream or reset) within `limit`; bytes that
  // arrive meanwhile are appended to `seen`.
  bool closed_within(std::chrono::milliseconds limit, std::string* seen = nullptr) {
    std::string sink;
    std::string& out = seen ? *seen : sink;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return true;
      out.append(buf, static_cast<size_t>(n));
    }
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  bool read_some(std::string& out, std::chrono::milliseconds limit) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    out.append(buf, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
};

// The status code of the first response in `raw` ("HTTP/1.1 413 ..."), or 0.
inline int status_of(std::string_view raw, size_t from = 0) {
  const size_t at = raw.find("HTTP/1.", from);
  if (at == std::string_view::npos || raw.size() < at + 12) return 0;
  return std::stoi(std::string(raw.substr(at + 9, 3)));
}

// How many responses (status lines) `raw` holds.
inline int count_responses(std::string_view raw) {
  int n = 0;
  for (size_t at = raw.find("HTTP/1.1 "); at != std::string_view::npos; at = raw.find("HTTP/1.1 ", at + 1))
    ++n;
  return n;
}

}  // namespace glass::server::testing
