#pragma once
// The server's view of one HTTP exchange, apart from the transport that reads and writes it
// (http_transport.h): a request whose head and body were read whole and checked, and a response that
// is either a body or a stream of chunks a provider writes from a worker thread.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace glass::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive ASCII comparison, as header names compare.
bool same_header_name(std::string_view a, std::string_view b);

// Whether the client of a request has gone (closed or reset its connection) while its handler runs.
// The transport marks it; a handler that waits registers what to do then (cancel its generation).
class ClientWatch {
 public:
  bool gone() const { return gone_.load(); }
  // `f` runs once, on the transport's thread, when the client goes (at once if it has gone already).
  void on_gone(std::function<void()> f);
  void clear();      // the handler is done: what on_gone registered no longer runs
  void mark_gone();  // the transport's side

 private:
  std::atomic<bool> gone_{false};
  std::mutex mu_;
  std::function<void()> callback_;
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // the target without its query
  HttpHeaders headers;
  std::string body;
  std::shared_ptr<ClientWatch> watch = std::make_shared<ClientWatch>();

  // The first value of header `name` (any case), or "".
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

// Where a streamed response's provider writes: each write is on the wire (or failed) when it returns.
class DataSink {
 public:
  virtual ~DataSink() = default;
  // False: the client has gone or stopped reading for the write deadline; the stream must end.
  virtual bool write(const char* data, size_t size) = 0;
  virtual void done() = 0;  // the stream's last chunk was written
};

struct HttpResponse {
  // Called until it returns false (drop the connection) or calls sink.done().
  using ContentProvider = std::function<bool(DataSink& sink)>;
  // Runs once when the response is dropped, however its stream ended (true: it reached done()).
  using ContentReleaser = std::function<void(bool done)>;

  int status = 200;
  HttpHeaders headers;
  std::string body;
  ContentProvider provider;  // set: the body is streamed in chunks (Transfer-Encoding: chunked)
  ContentReleaser releaser;

  void set_header(std::string name, std::string value);
  std::string get_header_value(std::string_view name) const;
  void set_content(std::string content, std::string_view content_type);
  void set_chunked_content_provider(std::string_view content_type, ContentProvider p, ContentReleaser r);
};

}  // namespace glass::server
