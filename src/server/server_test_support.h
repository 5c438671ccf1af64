#pragma once
// What the server tests share: a Server on 127.0.0.1 (a free port) over the bundled stories260K
// model, httplib::Client calls, SSE and error-object checks, bounded waits, solo reference runs.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <thread>

#include "server/server.h"
#include "support/fixtures.h"
#include "support/gate.h"

namespace glass::server::test_http {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// Writes BOS itself, as most real templates do (stories260K has none of its own).
inline constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

inline std::shared_ptr<const Model> model() {
  static const std::shared_ptr<const Model> m = [] {
    LoadOptions opt{
        .backend = "cpu", .n_ctx = 256, .kv_size = 2048, .n_threads = 2, .chat_template = kTemplate};
    auto r = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::shared_ptr<const Model>(*r) : nullptr;
  }();
  return m;
}

inline std::unique_ptr<Server> start(ServerOptions o = {}, bool attach = true) {
  o.host = "127.0.0.1";
  o.port = 0;
  auto s = Server::start(o);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  if (!s.ok()) return nullptr;
  if (attach) {
    auto m = model();
    EXPECT_TRUE(m);
    if (!m) return nullptr;
    auto st = (*s)->attach(m);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  }
  return std::move(*s);
}

inline httplib::Client client(const Server& s) {
  httplib::Client c("127.0.0.1", s.port());
  c.set_connection_timeout(5);
  c.set_read_timeout(30);
  c.set_write_timeout(5);
  c.set_tcp_nodelay(true);  // no Nagle delay between a request's header and body writes
  return c;
}

struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  Json json;  // the body, when it is JSON
};

inline Reply to_reply(const httplib::Result& r, const std::string& what) {
  Reply out;
  if (!r) {
    ADD_FAILURE() << what << ": " << httplib::to_string(r.error());
    return out;
  }
  out.status = r->status;
  out.body = r->body;
  out.headers = r->headers;
  if (r->get_header_value("Content-Type").rfind("application/json", 0) == 0) {
    out.json = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(out.json.is_discarded()) << what << ": not JSON: " << r->body;
  }
  return out;
}

inline Reply post(const Server& s, const std::string& path, const std::string& body,
                  const httplib::Headers& h = {}) {
  auto c = client(s);
  return to_reply(c.Post(path.c_str(), h, body, "application/json"), "POST " + path);
}

inline Reply post(const Server& s, const std::string& path, const Json& body,
                  const httplib::Headers& h = {}) {
  return post(s, path, body.dump(), h);
}

inline Reply get(const Server& s, const std::string& path, const httplib::Headers& h = {}) {
  auto c = client(s);
  return to_reply(c.Get(path.c_str(), h), "GET " + path);
}

// The payloads of a server-sent event stream ("data: X\n\n" each).
inline std::vector<std::string> sse_data(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << "unterminated event: " << body.substr(pos);
      break;
    }
    const std::string ev = body.substr(pos, end - pos);
    EXPECT_EQ(ev.rfind("data: ", 0), 0u) << ev;
    out.push_back(ev.substr(std::min<size_t>(6, ev.size())));
    pos = end + 2;
  }
  return out;
}

inline void expect_error(const Reply& r, int status, const std::string& param, const std::string& what) {
  EXPECT_EQ(r.status, status) << what << ": " << r.body;
  ASSERT_TRUE(r.json.is_object() && r.json.contains("error")) << what << ": " << r.body;
  const Json& e = r.json["error"];
  EXPECT_TRUE(e["message"].is_string()) << what;
  EXPECT_TRUE(e["type"].is_string()) << what;
  if (param.empty()) {
    EXPECT_TRUE(e["param"].is_null()) << what << ": " << r.body;
  } else {
    EXPECT_EQ(e["param"], param) << what << ": " << r.body;
    EXPECT_NE(e["message"].get<std::string>().find(param), std::string::npos) << what << ": " << r.body;
  }
  EXPECT_TRUE(e.contains("code")) << what;
}

// Polls `done` every 10 ms for at most 5 s.
template <class F>
inline bool eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

using test::Gate;

inline GenerateResult solo(const std::string& prompt, const GenerateConfig& cfg) {
  auto s = model()->new_session();
  EXPECT_TRUE(s.ok());
  auto r = generate(**s, prompt, cfg);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : GenerateResult{};
}

inline GenerateConfig greedy(int32_t n, std::vector<std::string> stop = {}) {
  GenerateConfig c;
  c.max_tokens = n;
  c.sampling.temperature = 0;
  c.stop = std::move(stop);
  return c;
}

// {"<id>": -100} for every end-of-generation token: a reply that cannot end before max_tokens.
inline Json ban_end_of_generation() {
  Json bias = Json::object();
  for (int32_t id = 0; id < model()->info().vocab_size; ++id)
    if (model()->is_end_of_generation(id)) bias[std::to_string(id)] = -100;
  return bias;
}

// A streamed greedy /v1/completions of "Lily" that runs to max_tokens; the caller adds its
// content_receiver.
inline httplib::Request streamed_completion_request(int max_tokens) {
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.set_header("Content-Type", "application/json");
  req.body = Json{
      {"prompt", "Lily"},
      {"max_tokens", max_tokens},
      {"temperature", 0},
      {"logit_bias", ban_end_of_generation()},
      {"stream",
       true}}.dump();
  return req;
}

}  // namespace glass::server::test_http
