#pragma once
// glass::server::HttpTransport: HTTP/1.1 over TCP for the server, built for hostile clients on
// Boost.Beast (docs/dependencies.md). One I/O thread runs every connection asynchronously, so slow or
// idle clients cost a socket each, not a thread; handlers run on a pool of worker threads.
//
// Per connection: a deadline for a whole request head and another for its body (a client that
// trickles bytes is cut off, however it paces them), bounded head size and field count, a body limit
// on the bytes held (chunked bodies included; compressed ones are refused by the head check), strict
// framing (conflicting Content-Length / Transfer-Encoding are 400, Beast's parser), one request at a
// time, so pipelined requests are answered in order, and a client that leaves while its handler runs
// is seen on the socket itself (HttpRequest::watch).
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "glass/result.h"
#include "server/http_message.h"

namespace glass::server {

struct HttpTransportOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port
  size_t max_body_bytes = size_t{8} << 20;
  size_t max_header_bytes = size_t{16} << 10;
  std::chrono::milliseconds head_timeout{10'000};   // from the first byte awaited to the head's end
  std::chrono::milliseconds body_timeout{60'000};   // from the head's end to the body's end
  std::chrono::milliseconds write_timeout{60'000};  // one response write (a chunk of a stream)
  size_t max_connections = 4096;                    // past it a connection gets 503 and is closed
  size_t workers = 16;                              // requests handled at once; more wait, read, for a worker
};

struct HttpHandlers {
  // The head alone, before its body is read: a response here refuses the request (the connection is
  // then closed, the body unread).
  std::function<std::optional<HttpResponse>(const HttpRequest& head, bool http_11)> check_head;
  // Whether `req` is answered on the I/O thread (cheap, never waiting: /health).
  std::function<bool(const HttpRequest& req)> run_inline;
  std::function<void(const HttpRequest& req, HttpResponse& res)> handle;
  // The response for what the transport refuses by itself (400, 413, 431, 503): status and message.
  std::function<HttpResponse(int status, const std::string& message)> error;
  // After a handled request's response was written, or failed to be (status as sent).
  std::function<void(const HttpRequest& req, int status)> written;
};

class HttpTransport {
 public:
  // Binds and starts serving. Errors: the address cannot be bound (Io).
  static Result<std::unique_ptr<HttpTransport>> start(const HttpTransportOptions& options,
                                                      HttpHandlers handlers);
  ~HttpTransport();  // stop()
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  int port() const;
  size_t connections() const;  // open now

  // Closes every connection (streams end where they are; handlers' writes fail), waits for the
  // handlers to return, and stops the threads. Idempotent.
  void stop();

  struct Impl;

 private:
  explicit HttpTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace glass::server
