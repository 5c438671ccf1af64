// glass serve's HTTP layer end to end, in process: a Server on 127.0.0.1 (a free port) over the
// bundled stories260K model, and httplib::Client as the client. Replies are compared with what the
// library gives the same request (glass::generate, Session::chat on a fresh session), streams with
// the replies they stream, and every error with OpenAI's error object. Every wait is bounded.
#include "server/server.h"

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

#include "support/fixtures.h"
#include "support/gate.h"

namespace glass::server {
namespace {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// Writes BOS itself, as most real templates do (stories260K has none of its own).
constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

std::shared_ptr<const Model> model() {
  static const std::shared_ptr<const Model> m = [] {
    LoadOptions opt{
        .backend = "cpu", .n_ctx = 256, .kv_size = 2048, .n_threads = 2, .chat_template = kTemplate};
    auto r = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::shared_ptr<const Model>(*r) : nullptr;
  }();
  return m;
}

std::unique_ptr<Server> start(ServerOptions o = {}, bool attach = true) {
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

httplib::Client client(const Server& s) {
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

Reply to_reply(const httplib::Result& r, const std::string& what) {
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

Reply post(const Server& s, const std::string& path, const std::string& body,
           const httplib::Headers& h = {}) {
  auto c = client(s);
  return to_reply(c.Post(path.c_str(), h, body, "application/json"), "POST " + path);
}

Reply post(const Server& s, const std::string& path, const Json& body, const httplib::Headers& h = {}) {
  return post(s, path, body.dump(), h);
}

Reply get(const Server& s, const std::string& path, const httplib::Headers& h = {}) {
  auto c = client(s);
  return to_reply(c.Get(path.c_str(), h), "GET " + path);
}

// The payloads of a server-sent event stream ("data: X\n\n" each).
std::vector<std::string> sse_data(const std::string& body) {
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

void expect_error(const Reply& r, int status, const std::string& param, const std::string& what) {
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
bool eventually(F done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

using test::Gate;

GenerateResult solo(const std::string& prompt, const GenerateConfig& cfg) {
  auto s = model()->new_session();
  EXPECT_TRUE(s.ok());
  auto r = generate(**s, prompt, cfg);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : GenerateResult{};
}

GenerateConfig greedy(int32_t n, std::vector<std::string> stop = {}) {
  GenerateConfig c;
  c.max_tokens = n;
  c.sampling.temperature = 0;
  c.stop = std::move(stop);
  return c;
}

// {"<id>": -100} for every end-of-generation token: a reply that cannot end before max_tokens.
Json ban_end_of_generation() {
  Json bias = Json::object();
  for (int32_t id = 0; id < model()->info().vocab_size; ++id)
    if (model()->is_end_of_generation(id)) bias[std::to_string(id)] = -100;
  return bias;
}

TEST(Server, HealthIs503UntilTheModelIsAttached) {
  auto s = start({}, /*attach=*/false);
  ASSERT_TRUE(s);
  Reply h = get(*s, "/health");
  EXPECT_EQ(h.status, 503);
  EXPECT_EQ(h.json["status"], "loading");
  expect_error(post(*s, "/v1/completions", Json{{"prompt", "Hi"}}), 503, "", "completion while loading");
  ASSERT_TRUE(s->attach(model()).ok());
  h = get(*s, "/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.json, (Json{{"status", "ok"}}));
}

TEST(Server, GreedyCompletionEqualsGenerateOnAFreshSession) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string prompt = "Once upon a time";
  const auto ids = *model()->tokenize(prompt);
  struct Case {
    Json extra;
    GenerateConfig cfg;
  };
  const Case cases[] = {
      {Json{{"max_tokens", 24}}, greedy(24)},
      {Json{{"max_tokens", 80}, {"stop", "."}}, greedy(80, {"."})},
      {Json{{"max_tokens", 80}, {"stop", Json::array({"Tom", "park"})}}, greedy(80, {"Tom", "park"})},
  };
  for (const Case& c : cases) {
    Json body = {{"prompt", prompt}, {"temperature", 0}};
    body.update(c.extra);
    const Reply r = post(*s, "/v1/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const GenerateResult want = solo(prompt, c.cfg);
    const Json& j = r.json;
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u) << j["id"];
    EXPECT_GT(j["created"].get<int64_t>(), 0);
    EXPECT_EQ(j["model"], "stories260K.gguf");
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_EQ(j["choices"][0]["text"], want.text) << body;
    EXPECT_EQ(j["choices"][0]["finish_reason"], want.finish == FinishReason::Length ? "length" : "stop");
    EXPECT_EQ(j["usage"]["prompt_tokens"], ids.size());
    EXPECT_EQ(j["usage"]["completion_tokens"], want.tokens.size());
    EXPECT_EQ(j["usage"]["total_tokens"], ids.size() + want.tokens.size());
  }
  // The same prompt as token ids, and with the model named by its file name.
  const Reply by_ids =
      post(*s, "/v1/completions",
           Json{{"prompt", ids}, {"temperature", 0}, {"max_tokens", 24}, {"model", "stories260K.gguf"}});
  ASSERT_EQ(by_ids.status, 200) << by_ids.body;
  EXPECT_EQ(by_ids.json["choices"][0]["text"], solo(prompt, greedy(24)).text);
}

TEST(Server, StreamedCompletionEqualsTheWholeReply) {
  auto s = start();
  ASSERT_TRUE(s);
  // A stop string: the text held back while it might be one must still reach the stream.
  const Json body = {
      {"prompt", "Lily wanted to"}, {"temperature", 0}, {"max_tokens", 60}, {"stop", {"park"}}};
  const Reply whole = post(*s, "/v1/completions", body);
  ASSERT_EQ(whole.status, 200);
  Json streamed_body = body;
  streamed_body["stream"] = true;
  streamed_body["stream_options"] = {{"include_usage", true}};
  const Reply r = post(*s, "/v1/completions", streamed_body);
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers.find("Content-Type")->second, "text/event-stream");
  const auto events = sse_data(r.body);
  ASSERT_GE(events.size(), 4u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  Json finish, usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json ev = Json::parse(events[i]);
    EXPECT_EQ(ev["object"], "text_completion");
    EXPECT_EQ(ev["id"], Json::parse(events[0])["id"]);
    if (ev["choices"].empty()) {
      usage = ev["usage"];  // the last event before [DONE]
      EXPECT_EQ(i + 2, events.size());
      continue;
    }
    EXPECT_TRUE(ev.contains("usage") && ev["usage"].is_null());
    text += ev["choices"][0]["text"].get<std::string>();
    if (!ev["choices"][0]["finish_reason"].is_null()) finish = ev["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, whole.json["choices"][0]["text"]);
  EXPECT_EQ(finish, whole.json["choices"][0]["finish_reason"]);
  EXPECT_EQ(usage, whole.json["usage"]);
}

TEST(Server, ChatEqualsSessionChatStreamedOrNot) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::vector<ChatMessage> conv = {{"system", "Tell a story."},
                                         {"user", "Lily and Tom went to the park."}};
  auto session = model()->new_session();
  ASSERT_TRUE(session.ok());
  auto want = (*session)->chat(conv, greedy(20));
  ASSERT_TRUE(want.ok()) << want.error().message;

  Json body = {{"messages",
                {{{"role", "system"}, {"content", "Tell a story."}},
                 {{"role", "user"},
                  {"content", Json::array({{{"type", "text"}, {"text", "Lily and Tom "}},
                                           {{"type", "text"}, {"text", "went to the park."}}})}}}},
               {"temperature", 0},
               {"max_completion_tokens", 20}};
  const Reply r = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["object"], "chat.completion");
  EXPECT_EQ(r.json["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(r.json["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r.json["choices"][0]["message"]["content"], want->text);
  EXPECT_EQ(r.json["usage"]["completion_tokens"], want->tokens.size());
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], want->timings.n_prompt_tokens);

  body["stream"] = true;
  const Reply st = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(st.status, 200);
  const auto events = sse_data(st.body);
  ASSERT_GE(events.size(), 3u) << st.body;
  EXPECT_EQ(events.back(), "[DONE]");
  const Json first = Json::parse(events.front());
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  const Json last = Json::parse(events[events.size() - 2]);
  EXPECT_EQ(last["choices"][0]["finish_reason"], r.json["choices"][0]["finish_reason"]);
  EXPECT_TRUE(last["choices"][0]["delta"].empty());
  EXPECT_FALSE(last.contains("usage"));  // not asked for
  std::string text;
  for (size_t i = 1; i + 2 < events.size(); ++i) {
    const Json ev = Json::parse(events[i]);
    EXPECT_TRUE(ev["choices"][0]["finish_reason"].is_null());
    text += ev["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(text, want->text);
}

TEST(Server, MalformedBodiesAre400NamingTheirField) {
  auto s = start();
  ASSERT_TRUE(s);
  struct Case {
    std::string path;
    std::string body;
    std::string param;  // "" = null: the body as a whole
  };
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  const std::string too_long = Json{{"prompt", std::vector<int32_t>(300, 5)}}.dump();  // n_ctx is 256
  // Nested deep enough that anything recursing over it (a printer, a destructor) would overflow the stack.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<Case> cases = {
      {c, "{not json", ""},
      {c, "", ""},
      {c, "[1, 2]", ""},
      {c, deep, ""},
      {c, "{\"prompt\": \"\xff\"}", ""},  // not UTF-8
      {c, R"({"prompt": "x", "max_tokens": 1e400})", ""},
      {c, R"({"prompt": "x", "max_tokens": )" + deep + "}", "max_tokens"},
      {c, R"({"prompt": )" + deep + "}", "prompt"},
      {c, R"({"prompt": "x", "temperature": -1})", "temperature"},
      {c, R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {c, R"({"prompt": "x", "top_p": 1.5})", "top_p"},
      {c, R"({"prompt": "x", "top_p": 0})", "top_p"},
      {c, R"({"prompt": "x", "max_tokens": -1})", "max_tokens"},
      {c, R"({"prompt": "x", "top_k": "5"})", "top_k"},
      {c, R"({"prompt": "x", "min_p": 2})", "min_p"},
      {c, R"({"prompt": "x", "seed": "abc"})", "seed"},
      {c, R"({"prompt": "x", "stop": 5})", "stop"},
      {c, R"({"prompt": "x", "presence_penalty": 3})", "presence_penalty"},
      {c, R"({"prompt": "x", "frequency_penalty": -2.5})", "frequency_penalty"},
      {c, R"({"prompt": "x", "logit_bias": [1]})", "logit_bias"},
      {c, R"({"prompt": "x", "logit_bias": {"99999": 1}})", "logit_bias"},
      {c, R"({"prompt": "x", "stream": "yes"})", "stream"},
      {c, R"({"prompt": "x", "stream_options": 5})", "stream_options"},
      {c, R"({"prompt": "x", "n": 9})", "n"},
      {c, R"({"prompt": "x", "logprobs": 5})", "logprobs"},
      {c, R"({"prompt": "x", "model": 5})", "model"},
      {c, R"({"max_tokens": 5})", "prompt"},
      {c, R"({"prompt": 5})", "prompt"},
      {c, R"({"prompt": [1, -3]})", "prompt"},
      {c, R"({"prompt": [1, 99999]})", "prompt"},
      {c, too_long, "prompt"},
      {chat, R"({"max_tokens": 5})", "messages"},
      {chat, R"({"messages": "hi"})", "messages"},
      {chat, R"({"messages": []})", "messages"},
      {chat, R"({"messages": [5]})", "messages[0]"},
      {chat, R"({"messages": )" + deep + "}", "messages[0]"},
      {chat, R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {chat, R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {chat, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {chat, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type"},
      {chat, R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -5})",
       "max_completion_tokens"},
      {chat, R"({"messages": [{"role": "user", "content": "x"}], "temperature": 9})", "temperature"},
      {chat, R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})",
       "tools[0].function"},
      {chat,
       R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}})",
       "response_format"},
      {chat, R"({"messages": [{"role": "user", "content": "x"}], "n": 0})", "n"},
      {"/tokenize", R"({"content": 5})", "content"},
      {"/tokenize", R"({"content": "x", "add_special": "yes"})", "add_special"},
      {"/detokenize", R"({"tokens": "abc"})", "tokens"},
      {"/detokenize", R"({"tokens": [1, "a"]})", "tokens"},
  };
  for (const Case& k : cases) {
    const Reply r = post(*s, k.path, k.body);
    expect_error(r, 400, k.param, k.path + " " + k.body.substr(0, 120));
    if (r.json.contains("error")) {
      EXPECT_EQ(r.json["error"]["type"], "invalid_request_error");
    }
  }
  // None of them reached the engine, and the server still serves.
  EXPECT_EQ(s->engine()->stats().completed, 0);
  EXPECT_EQ(post(*s, c, Json{{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(Server, ApiKeyIsRequiredExceptForHealth) {
  auto s = start({.api_key = "sekret"});
  ASSERT_TRUE(s);
  const Reply none = get(*s, "/v1/models");
  expect_error(none, 401, "", "no key");
  EXPECT_EQ(none.json["error"]["code"], "invalid_api_key");
  expect_error(get(*s, "/v1/models", {{"Authorization", "Bearer wrong"}}), 401, "", "wrong key");
  expect_error(get(*s, "/v1/models", {{"Authorization", "sekret"}}), 401, "", "no Bearer");
  expect_error(post(*s, "/v1/completions", Json{{"prompt", "x"}}), 401, "", "completion without key");
  EXPECT_EQ(get(*s, "/health").status, 200);
  const httplib::Headers key = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(get(*s, "/v1/models", key).status, 200);
  EXPECT_EQ(post(*s, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}}, key).status, 200);
}

TEST(Server, UnknownModelAndPathAre404) {
  auto s = start({.alias = "tiny"});
  ASSERT_TRUE(s);
  const Reply models = get(*s, "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json["object"], "list");
  ASSERT_EQ(models.json["data"].size(), 1u);
  EXPECT_EQ(models.json["data"][0]["id"], "tiny");
  EXPECT_EQ(models.json["data"][0]["object"], "model");

  const Reply wrong = post(*s, "/v1/completions", Json{{"prompt", "x"}, {"model", "gpt-4"}});
  expect_error(wrong, 404, "model", "wrong model");
  EXPECT_EQ(wrong.json["error"]["code"], "model_not_found");
  expect_error(post(*s, "/v1/chat/completions",
                    Json{{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"model", "gpt-4"}}),
               404, "model", "wrong chat model");
  for (const char* name : {"tiny", "stories260K.gguf"}) {
    const Reply ok = post(*s, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}, {"model", name}});
    EXPECT_EQ(ok.status, 200) << name;
    EXPECT_EQ(ok.json["model"], "tiny");
  }
  expect_error(post(*s, "/v1/nope", Json::object()), 404, "", "unknown path");
  expect_error(get(*s, "/v1/completions"), 404, "", "wrong method");
}

TEST(Server, TokenizeAndDetokenizeUseTheModelsTokenizer) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string text = "Once upon a time, Lily";
  const Reply plain = post(*s, "/tokenize", Json{{"content", text}});
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.json["tokens"], Json(*model()->tokenize(text, /*add_special=*/false)));
  const Reply special = post(*s, "/tokenize", Json{{"content", text}, {"add_special", true}});
  const auto with_bos = *model()->tokenize(text, /*add_special=*/true);
  EXPECT_EQ(special.json["tokens"], Json(with_bos));
  const Reply back = post(*s, "/detokenize", Json{{"tokens", with_bos}});
  ASSERT_EQ(back.status, 200) << back.body;
  EXPECT_EQ(back.json["content"], model()->detokenize(with_bos));
}

TEST(Server, BusyEngineIs429WithRetryAfter) {
  Gate entered, release;  // before the server: its engine's callbacks use them
  std::atomic<bool> first{true};
  auto s = start({.engine = {.max_running = 1, .max_queued = 1}});
  ASSERT_TRUE(s);
  Engine& engine = *s->engine();
  // A long request that holds the only sequence and stops the engine in its first piece.
  GenerateConfig long_cfg = greedy(100);
  long_cfg.stop_at_end_of_generation = false;
  auto blocker = engine.submit({*model()->tokenize("Once"), long_cfg}, [&](std::string_view) {
    if (first.exchange(false)) {
      entered.open();
      release.wait();
    }
    return true;
  });
  ASSERT_TRUE(blocker.ok());
  ASSERT_TRUE(entered.wait());
  Reply queued;
  std::thread waiting([&] {
    queued = post(*s, "/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 2}});
  });
  const bool one_waits = eventually([&] { return engine.stats().queued == 1; });
  Reply busy;
  if (one_waits) busy = post(*s, "/v1/completions", Json{{"prompt", "Hi"}, {"max_tokens", 2}});
  release.open();
  (*blocker)->cancel();
  waiting.join();
  ASSERT_TRUE(one_waits);
  expect_error(busy, 429, "", "busy");
  EXPECT_EQ(busy.headers.count("Retry-After"), 1u);
  EXPECT_EQ(busy.headers.find("Retry-After")->second, "1");
  EXPECT_EQ(queued.status, 200) << queued.body;
}

TEST(Server, BodiesOverTheLimitAre413) {
  auto s = start({.max_body_bytes = 4096});
  ASSERT_TRUE(s);
  const std::string big = Json{{"prompt", std::string(10000, 'a')}}.dump();
  expect_error(post(*s, "/v1/completions", big), 413, "", "large body");
  EXPECT_EQ(post(*s, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(Server, KeepAliveConnectionServesSeveralRequests) {
  auto s = start();
  ASSERT_TRUE(s);
  auto c = client(*s);
  c.set_keep_alive(true);
  for (int i = 0; i < 3; ++i) {
    auto r = c.Post("/v1/completions",
                    Json{{"prompt", "x"}, {"max_tokens", 3}, {"stream", i == 1}, {"temperature", 0}}.dump(),
                    "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_TRUE(r->has_header("Keep-Alive")) << i;
    EXPECT_NE(r->get_header_value("Connection"), "close") << i;
  }
}

bool metric_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != ':') return false;
  return true;
}

bool sample_value(const std::string& s) {
  if (s == "+Inf" || s == "-Inf" || s == "NaN") return true;
  if (s.empty() || s.find_first_not_of("0123456789.eE+-") != std::string::npos) return false;
  size_t used = 0;
  try {
    std::stod(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == s.size();
}

// `# HELP|TYPE name ...`, or `name{label="value",...} value`: Prometheus's text format (no
// timestamps; label values here never hold quotes or braces). std::regex is avoided: GCC 12 warns
// inside it at -O1, which the sanitizer build turns into errors.
bool prometheus_line(const std::string& line) {
  if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
    const std::string rest = line.substr(7);
    return metric_name(rest.substr(0, rest.find(' ')));
  }
  const size_t sp = line.rfind(' ');
  if (sp == std::string::npos || !sample_value(line.substr(sp + 1))) return false;
  const std::string series = line.substr(0, sp);
  const size_t brace = series.find('{');
  if (brace == std::string::npos) return metric_name(series);
  if (!metric_name(std::string_view(series).substr(0, brace)) || series.back() != '}') return false;
  std::string_view labels = std::string_view(series).substr(brace + 1, series.size() - brace - 2);
  while (!labels.empty()) {
    const size_t eq = labels.find("=\"");
    if (eq == std::string_view::npos || !metric_name(labels.substr(0, eq))) return false;
    const size_t close = labels.find('"', eq + 2);
    if (close == std::string_view::npos) return false;
    labels.remove_prefix(close + 1);
    if (!labels.empty()) {
      if (labels[0] != ',') return false;
      labels.remove_prefix(1);
    }
  }
  return true;
}

std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    EXPECT_TRUE(prometheus_line(line)) << "'" << line << "'";
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

TEST(Server, MetricsAreValidPrometheusTextAndCountRequests) {
  // The checker itself first.
  EXPECT_TRUE(prometheus_line("a_total{status=\"200\",x=\"y\"} 3"));
  EXPECT_TRUE(prometheus_line("a_bucket{le=\"+Inf\"} 1.5e-05"));
  EXPECT_FALSE(prometheus_line("a_total{status=200} 3"));
  EXPECT_FALSE(prometheus_line("a total"));
  EXPECT_FALSE(prometheus_line("9a 1"));
  auto s = start();
  ASSERT_TRUE(s);
  const Reply ok =
      post(*s, "/v1/completions", Json{{"prompt", "Once upon"}, {"max_tokens", 12}, {"temperature", 0}});
  ASSERT_EQ(ok.status, 200);
  EXPECT_EQ(post(*s, "/v1/completions", Json{{"prompt", "x"}, {"top_p", 7}}).status, 400);
  EXPECT_EQ(get(*s, "/nope").status, 404);
  // The status is counted once the response was written: the client may be a moment ahead.
  std::map<std::string, double> m;
  std::string text;
  const bool counted = eventually([&] {
    const Reply r = get(*s, "/metrics");
    text = r.body;
    EXPECT_EQ(r.headers.find("Content-Type")->second.rfind("text/plain; version=0.0.4", 0), 0u);
    m = samples(r.body);
    return m["glass_requests_total{status=\"200\"}"] >= 1 && m["glass_requests_total{status=\"400\"}"] == 1 &&
           m["glass_requests_total{status=\"404\"}"] == 1;
  });
  ASSERT_TRUE(counted) << text;
  EXPECT_EQ(m["glass_generation_requests_total"], 1);
  EXPECT_EQ(m["glass_prompt_tokens_total"], ok.json["usage"]["prompt_tokens"].get<double>());
  EXPECT_EQ(m["glass_generated_tokens_total"], ok.json["usage"]["completion_tokens"].get<double>());
  EXPECT_EQ(m["glass_time_to_first_token_seconds_count"], 1);
  EXPECT_EQ(m["glass_time_to_first_token_seconds_bucket{le=\"+Inf\"}"], 1);
  EXPECT_GT(m["glass_time_to_first_token_seconds_sum"], 0);
  const double gaps = ok.json["usage"]["completion_tokens"].get<double>() - 1;
  EXPECT_EQ(m["glass_inter_token_latency_seconds_count"], gaps);
  EXPECT_EQ(m["glass_queue_depth"], 0);
  EXPECT_EQ(m["glass_running_sequences"], 0);
  EXPECT_EQ(m["glass_kv_blocks_used"], 0);
  EXPECT_GT(m["glass_kv_blocks_free"], 0);
  EXPECT_TRUE(m.count("glass_kv_blocks_cached"));
  EXPECT_TRUE(m.count("glass_prefix_cache_hit_tokens_total"));
  EXPECT_EQ(m["glass_plans_compiled"], static_cast<double>(model()->plans_compiled()));

  // promtool's linter, where installed (Debian's prometheus package); optional.
  if (std::system("command -v promtool > /dev/null 2>&1") == 0) {
    const auto path = std::filesystem::temp_directory_path() / "glass_server_test_metrics.txt";
    std::ofstream(path) << text;
    EXPECT_EQ(std::system(("promtool check metrics < " + path.string()).c_str()), 0) << text;
    std::filesystem::remove(path);
  }
}

// A reply that cannot end by itself soon: every engine step is held back 2 ms by this request's
// callback, and end-of-generation tokens are banned in the one under test.
std::shared_ptr<RequestHandle> pace(Engine& engine, std::atomic<bool>& pacing) {
  GenerateConfig cfg = greedy(200);
  cfg.stop_at_end_of_generation = false;
  auto h = engine.submit({*model()->tokenize("Once"), cfg}, [&pacing](std::string_view) {
    if (pacing.load()) std::this_thread::sleep_for(2ms);
    return true;
  });
  EXPECT_TRUE(h.ok());
  return h.ok() ? *h : nullptr;
}

TEST(Server, ClientLeavingMidStreamCancelsItsRequest) {
  std::atomic<bool> pacing{true};
  auto s = start();
  ASSERT_TRUE(s);
  Engine& engine = *s->engine();
  auto pacer = pace(engine, pacing);
  ASSERT_TRUE(pacer);
  std::string received;
  {
    auto c = client(*s);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.set_header("Content-Type", "application/json");
    req.body = Json{
        {"prompt", "Lily"},
        {"max_tokens", 200},
        {"temperature", 0},
        {"logit_bias", ban_end_of_generation()},
        {"stream",
         true}}.dump();
    // Three events, then the client hangs up.
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      received.append(data, n);
      size_t events = 0;
      for (size_t p = received.find("\n\n"); p != std::string::npos; p = received.find("\n\n", p + 2))
        ++events;
      return events < 3;
    };
    auto r = c.send(req);
    EXPECT_FALSE(r);
  }
  EXPECT_EQ(received.rfind("data: ", 0), 0u) << received;
  EXPECT_EQ(received.find("[DONE]"), std::string::npos);
  EXPECT_TRUE(eventually([&] { return engine.stats().cancelled == 1; })) << engine.stats().cancelled;
  EXPECT_FALSE(pacer->done());  // the pacer outlived it: the stream did not just run out
  pacing = false;
  pacer->cancel();
  ASSERT_TRUE(pacer->wait().ok());
  EXPECT_TRUE(eventually([&] {
    const auto st = engine.stats();
    return st.running == 0 && st.queued == 0 && st.blocks_used == 0;
  }));
  const auto st = engine.stats();
  EXPECT_EQ(st.cancelled, 2);
  EXPECT_EQ(st.blocks_used, 0);
  EXPECT_TRUE(engine.check_invariants().ok());
}

TEST(Server, StopEndsOpenStreams) {
  std::atomic<bool> pacing{true};
  auto s = start();
  ASSERT_TRUE(s);
  auto pacer = pace(*s->engine(), pacing);
  ASSERT_TRUE(pacer);
  Gate streaming;
  std::string received;
  std::thread reader([&] {
    auto c = client(*s);
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/chat/completions";
    req.set_header("Content-Type", "application/json");
    req.body = Json{
        {"messages", {{{"role", "user"}, {"content", "Hi"}}}},
        {"max_tokens", 200},
        {"logit_bias", ban_end_of_generation()},
        {"stream",
         true}}.dump();
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      received.append(data, n);
      streaming.open();
      return true;
    };
    c.send(req);
    streaming.open();  // also when it failed before any event
  });
  ASSERT_TRUE(streaming.wait());
  const auto t0 = std::chrono::steady_clock::now();
  s->stop();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  reader.join();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(received.rfind("data: ", 0), 0u) << received;
  EXPECT_EQ(received.find("[DONE]"), std::string::npos);
  EXPECT_EQ(pacer->wait()->finish, FinishReason::Cancelled);
  pacing = false;
}

// n choices: each an engine request of its own (seed + i), indexed, with the usage summed and the
// prompt counted once; streamed, their chunks interleave tagged with the choice index.
TEST(Server, NChoicesAreIndexedWithSummedUsageStreamedOrNot) {
  auto s = start();
  ASSERT_TRUE(s);
  const Json msgs = {{{"role", "user"}, {"content", "Lily and Tom went to the park."}}};
  const Json one =
      post(*s, "/v1/chat/completions", Json{{"messages", msgs}, {"temperature", 0}, {"max_tokens", 10}}).json;
  ASSERT_TRUE(one.contains("choices")) << one.dump();
  const Reply greedy3 = post(*s, "/v1/chat/completions",
                             Json{{"messages", msgs}, {"temperature", 0}, {"max_tokens", 10}, {"n", 3}});
  ASSERT_EQ(greedy3.status, 200) << greedy3.body;
  ASSERT_EQ(greedy3.json["choices"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(greedy3.json["choices"][i]["index"], i);
    EXPECT_EQ(greedy3.json["choices"][i]["message"], one["choices"][0]["message"]);  // greedy: the same
  }
  EXPECT_EQ(greedy3.json["usage"]["prompt_tokens"], one["usage"]["prompt_tokens"]);
  EXPECT_EQ(greedy3.json["usage"]["completion_tokens"], 3 * one["usage"]["completion_tokens"].get<int>());

  // Sampled: choice i is what n = 1 gives with seed 7 + i.
  Json body = {{"messages", msgs}, {"temperature", 1.0}, {"max_tokens", 12}, {"seed", 7}, {"n", 3}};
  const Reply sampled = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(sampled.status, 200) << sampled.body;
  ASSERT_EQ(sampled.json["choices"].size(), 3u);
  int64_t completion = 0;
  for (int i = 0; i < 3; ++i) {
    Json single = body;
    single["n"] = 1;
    single["seed"] = 7 + i;
    const Reply r = post(*s, "/v1/chat/completions", single);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(sampled.json["choices"][i]["message"]["content"], r.json["choices"][0]["message"]["content"])
        << i;
    EXPECT_EQ(sampled.json["choices"][i]["finish_reason"], r.json["choices"][0]["finish_reason"]) << i;
    completion += r.json["usage"]["completion_tokens"].get<int64_t>();
  }
  EXPECT_EQ(sampled.json["usage"]["completion_tokens"], completion);

  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  const Reply st = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(st.status, 200) << st.body;
  const auto events = sse_data(st.body);
  ASSERT_GE(events.size(), 8u) << st.body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::map<int, std::string> text;
  std::map<int, int> roles, finishes;
  Json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json ev = Json::parse(events[i]);
    if (ev["choices"].empty()) {
      usage = ev["usage"];
      continue;
    }
    const Json& c = ev["choices"][0];
    const int idx = c["index"].get<int>();
    if (c["delta"].contains("role")) ++roles[idx];
    if (c["delta"].contains("content")) text[idx] += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) {
      ++finishes[idx];
      EXPECT_EQ(c["finish_reason"], sampled.json["choices"][idx]["finish_reason"]);
    }
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(roles[i], 1) << i;
    EXPECT_EQ(finishes[i], 1) << i;
    EXPECT_EQ(text[i], sampled.json["choices"][i]["message"]["content"]) << i;
  }
  EXPECT_EQ(usage, sampled.json["usage"]);

  // Completions take n too.
  const Reply c2 = post(*s, "/v1/completions", Json{{"prompt", "Once upon"}, {"max_tokens", 4}, {"n", 2}});
  ASSERT_EQ(c2.status, 200) << c2.body;
  ASSERT_EQ(c2.json["choices"].size(), 2u);
  EXPECT_EQ(c2.json["choices"][1]["index"], 1);
}

// A Llama 3 style template (calls are the whole reply, a JSON object): a reply that starts like one
// is held back while streaming, and once it does not parse it arrives whole as content, the same
// content the unstreamed reply has. (stories260K cannot write a real call; logit_bias makes it
// write braces.)
TEST(Server, ReplyThatLooksLikeACallButIsNotStaysContent) {
  LoadOptions opt{.backend = "cpu",
                  .n_ctx = 256,
                  .kv_size = 2048,
                  .n_threads = 2,
                  .chat_template = std::string(kTemplate) +
                                   "{# <|start_header_id|> tools as {\"name\": ..., \"parameters\": ...} #}"};
  auto loaded = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  std::shared_ptr<const Model> m = *loaded;
  auto brace = m->tokenize("{", /*add_special=*/false);
  ASSERT_TRUE(brace.ok());
  ASSERT_FALSE(brace->empty());  // a leading space token, then the brace
  ASSERT_EQ(m->token_to_piece(brace->back()), "{");
  auto s = start({}, /*attach=*/false);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->attach(m).ok());
  Json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
               {"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
               {"temperature", 0},
               {"max_tokens", 6},
               {"logit_bias", {{std::to_string(brace->back()), 100}}}};
  const Reply whole = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json& msg = whole.json["choices"][0]["message"];
  ASSERT_TRUE(msg["content"].is_string()) << whole.body;
  EXPECT_EQ(msg["content"].get<std::string>().substr(0, 2), "{{");
  EXPECT_FALSE(msg.contains("tool_calls"));
  EXPECT_EQ(whole.json["choices"][0]["finish_reason"], "length");

  body["stream"] = true;
  const Reply st = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(st.status, 200);
  const auto events = sse_data(st.body);
  // role, the held text in one piece, finish, [DONE]
  ASSERT_EQ(events.size(), 4u) << st.body;
  EXPECT_EQ(Json::parse(events[1])["choices"][0]["delta"]["content"], msg["content"]);
  EXPECT_EQ(Json::parse(events[2])["choices"][0]["finish_reason"], "length");
}

class ServerTools : public test::WithSharedFixtures {};

// A real tool template (Qwen2.5's, as --chat-template-file gives it) sees the request's tools and
// tool turns in OpenAI's wire form the way transformers renders them: the prompt is the fixture's
// Jinja2 render. Tools of the wrong shape are 400s naming the field.
TEST_F(ServerTools, ToolRequestsRenderThroughTheTemplateAndBadShapesAre400) {
  std::ifstream tin(fixtures_ / "templates/qwen2_5_instruct.jinja", std::ios::binary);
  const std::string source((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(source.empty());
  LoadOptions opt{.backend = "cpu", .n_ctx = 1024, .kv_size = 2048, .n_threads = 2, .chat_template = source};
  auto loaded = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  std::shared_ptr<const Model> qwen = *loaded;
  auto s = start({}, /*attach=*/false);
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->attach(qwen).ok());

  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_current_weather",
      "description": "Get the current weather in a given city.", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, "unit": {"type":
      "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}}, "required": ["city"]}}}])");
  const Json messages = Json::parse(R"([{"role": "user", "content": "What's the weather like in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "a1b2c3d4e", "type": "function",
        "function": {"name": "get_current_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}}]},
      {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "get_current_weather",
       "content": "{\"temperature\": 18, \"condition\": \"cloudy\"}"}])");
  // Key order matters to the render (tojson): send the body as written, not through nlohmann::json's
  // sorted objects.
  const std::string body =
      R"({"messages": )" + nlohmann::ordered_json::parse(messages.dump()).dump() + R"(, "tools": )" +
      nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_current_weather",
      "description": "Get the current weather in a given city.", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, "unit": {"type":
      "string", "enum": ["celsius", "fahrenheit"], "description": "Temperature unit"}}, "required": ["city"]}}}])")
          .dump() +
      R"(, "temperature": 0, "max_tokens": 4})";
  std::ifstream ein(fixtures_ / "templates/expected/qwen2_5_instruct__tool_call_roundtrip.txt",
                    std::ios::binary);
  const std::string expected((std::istreambuf_iterator<char>(ein)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(expected.empty());
  auto want = qwen->tokenize(expected, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_TRUE(want.ok());
  const Reply r = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["usage"]["prompt_tokens"], want->size());
  // stories260K writes no calls: plain content.
  EXPECT_TRUE(r.json["choices"][0]["message"]["content"].is_string()) << r.body;
  EXPECT_FALSE(r.json["choices"][0]["message"].contains("tool_calls"));
  EXPECT_NE(r.json["choices"][0]["finish_reason"], "tool_calls");

  const std::string user = R"({"messages": [{"role": "user", "content": "x"}], )";
  struct Case {
    std::string body;
    std::string param;
  };
  const Case cases[] = {
      {user + R"("tools": "get_weather"})", "tools"},
      {user + R"("tools": [5]})", "tools[0]"},
      {user + R"("tools": [{"type": "code_interpreter"}]})", "tools[0].type"},
      {user + R"("tools": [{"type": "function"}]})", "tools[0].function"},
      {user + R"("tools": [{"type": "function", "function": {"description": "no name"}}]})",
       "tools[0].function.name"},
      {user + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]})",
       "tools[0].function.parameters"},
      {user + R"("tool_choice": "required", "tools": )" + tools.dump() + "}", "tool_choice"},
      {user + R"("tool_choice": {"type": "function", "function": {"name": "get_current_weather"}}})",
       "tool_choice"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]})",
       "messages[0].tool_calls[0].function.name"},
  };
  for (const Case& k : cases) expect_error(post(*s, "/v1/chat/completions", k.body), 400, k.param, k.body);
  EXPECT_EQ(s->engine()->stats().completed, 1);  // none of them reached the engine
}

}  // namespace
}  // namespace glass::server
