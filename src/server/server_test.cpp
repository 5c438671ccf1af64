// glass serve's HTTP layer end to end, in process: a Server on 127.0.0.1 (a free port) over the
// bundled stories260K model, and httplib::Client as the client. Replies are compared with what the
// library gives the same request (glass::generate, Session::chat on a fresh session), streams with
// the replies they stream, and every error with OpenAI's error object. Every wait is bounded.
#include "server/server_test_support.h"

namespace glass::server {
namespace {

using namespace test_http;  // NOLINT(google-build-using-namespace)
using Json = nlohmann::json;
using namespace std::chrono_literals;

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
      {c, R"({"prompt": "x", "logprobs": 6})", "logprobs"},
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
      {chat, R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})",
       "response_format.type"},
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
  EXPECT_EQ(models.json["data"][0]["max_model_len"], 256);  // the served context (n_ctx)

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
    httplib::Request req = streamed_completion_request(200);
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

}  // namespace
}  // namespace glass::server
