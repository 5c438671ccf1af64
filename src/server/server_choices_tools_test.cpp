// glass serve's n choices and tool calls end to end (server_test_support.h): choices indexed with
// usage summed, streamed interleaved; a reply that only looks like a call stays content; tool
// requests rendered through a real tool template, bad tool shapes answered 400 naming the field.
#include "server/server_test_support.h"

namespace glass::server {
namespace {

using namespace test_http;  // NOLINT(google-build-using-namespace)
using Json = nlohmann::json;
using namespace std::chrono_literals;

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
      {user + R"("tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": )" + tools.dump() +
           "}",
       "tool_choice.function.name"},
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
