// Thoughts over HTTP: reasoning_content in replies and streamed deltas for a think-tag template (the
// prompt opening the tag, chat_template_kwargs closing it), gpt-oss's harmony messages and calls,
// and reasoning_format "none". stories260K cannot think; a grammar makes it write the markup.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "server/server_test_support.h"

namespace glass::server::test_http {
namespace {

// As Qwen 3's template: the prompt ends inside <think> unless enable_thinking is false.
constexpr const char* kThinkTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}{% endif %}";

// Harmony's markers (as text here: stories260K has no such control tokens) and a recipient.
constexpr const char* kHarmonyTemplate =
    "{{ bos_token }}{% for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant{% endif %}{# <|channel|>commentary to=functions.NAME "
    "#}";

std::unique_ptr<Server> serve_with(const char* chat_template, std::shared_ptr<const Model>& keep,
                                   ServerOptions options = {}) {
  LoadOptions opt{
      .backend = "cpu", .n_ctx = 256, .kv_size = 2048, .n_threads = 2, .chat_template = chat_template};
  auto loaded = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
  if (!loaded.ok()) return nullptr;
  keep = *loaded;
  auto s = start(std::move(options), /*attach=*/false);
  if (!s || !s->attach(keep).ok()) return nullptr;
  return s;
}

Json chat_body(const std::string& grammar) {
  return Json{{"messages", {{{"role", "user"}, {"content", "hi"}}}},
              {"temperature", 0},
              {"max_tokens", 200},
              {"grammar", grammar}};
}

// The streamed reply's reasoning and content, each concatenated, and its last finish_reason.
struct Streamed {
  std::string reasoning;
  std::string content;
  Json tool_calls = Json::array();
  std::string finish;
};

Streamed stream(const Server& s, Json body) {
  body["stream"] = true;
  const Reply r = post(s, "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  Streamed out;
  for (const std::string& data : sse_data(r.body)) {
    if (data == "[DONE]") continue;
    const Json j = Json::parse(data);
    const Json& choice = j["choices"][0];
    const Json& delta = choice["delta"];
    if (delta.contains("reasoning_content")) out.reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content") && delta["content"].is_string())
      out.content += delta["content"].get<std::string>();
    if (delta.contains("tool_calls"))
      for (const Json& c : delta["tool_calls"]) out.tool_calls.push_back(c);
    if (choice["finish_reason"].is_string()) out.finish = choice["finish_reason"];
  }
  return out;
}

TEST(ServerReasoning, ThinkTagsOpenedByThePromptComeBackAsReasoningContent) {
  std::shared_ptr<const Model> m;
  auto s = serve_with(kThinkTemplate, m);
  ASSERT_TRUE(s);
  const Json body = chat_body(R"(root ::= "I plan.\n</think>\n\nThe answer.")");
  const Reply whole = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  const Json& msg = whole.json["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "I plan.");
  EXPECT_EQ(msg["content"], "The answer.");
  EXPECT_EQ(whole.json["choices"][0]["finish_reason"], "stop");

  const Streamed st = stream(*s, body);
  EXPECT_EQ(st.reasoning, "I plan.");
  EXPECT_EQ(st.content, "The answer.");
  EXPECT_EQ(st.finish, "stop");

  // reasoning_format "none": the text as the model wrote it.
  Json raw = body;
  raw["reasoning_format"] = "none";
  const Reply r = post(*s, "/v1/chat/completions", raw);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["message"]["content"], "I plan.\n</think>\n\nThe answer.");
  EXPECT_FALSE(r.json["choices"][0]["message"].contains("reasoning_content"));
}

TEST(ServerReasoning, ChatTemplateKwargsReachTheTemplate) {
  std::shared_ptr<const Model> m;
  auto s = serve_with(kThinkTemplate, m);
  ASSERT_TRUE(s);
  // Thinking off: the template closes the tag itself, so the reply is all content.
  Json body = chat_body(R"(root ::= "Plain answer.")");
  body["chat_template_kwargs"] = {{"enable_thinking", false}};
  const Reply r = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["choices"][0]["message"]["content"], "Plain answer.");
  EXPECT_FALSE(r.json["choices"][0]["message"].contains("reasoning_content"));
  // With thinking on (the default), the same words are thoughts cut short by the grammar's end.
  body.erase("chat_template_kwargs");
  const Reply t = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json["choices"][0]["message"]["reasoning_content"], "Plain answer.");
  EXPECT_EQ(t.json["choices"][0]["message"]["content"], "");

  for (const auto& [kwargs, param] :
       {std::pair{Json(5), std::string("chat_template_kwargs")},
        std::pair{Json{{"messages", Json::array()}}, std::string("chat_template_kwargs.messages")},
        std::pair{Json{{"add_generation_prompt", false}},
                  std::string("chat_template_kwargs.add_generation_prompt")}}) {
    Json bad = body;
    bad["chat_template_kwargs"] = kwargs;
    expect_error(post(*s, "/v1/chat/completions", bad), 400, param, "");
  }
  Json bad = body;
  bad["reasoning_format"] = "raw";
  expect_error(post(*s, "/v1/chat/completions", bad), 400, "reasoning_format", "raw");
}

// --chat-template-kwargs: variables for every request, a request's own over them.
TEST(ServerReasoning, ServerTemplateKwargsAndTheRequestsOverThem) {
  std::shared_ptr<const Model> m;
  auto s =
      serve_with(kThinkTemplate, m, ServerOptions{.chat_template_kwargs = R"({"enable_thinking": false})"});
  ASSERT_TRUE(s);
  Json body = chat_body(R"(root ::= "Words.")");
  const Reply off = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_EQ(off.json["choices"][0]["message"]["content"], "Words.");
  body["chat_template_kwargs"] = {{"enable_thinking", true}};
  const Reply on = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(on.status, 200) << on.body;
  EXPECT_EQ(on.json["choices"][0]["message"]["reasoning_content"], "Words.");
  for (const char* bad : {"[1]", "{", "\"x\""}) {
    auto refused = Server::start(ServerOptions{.host = "127.0.0.1", .port = 0, .chat_template_kwargs = bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.error().message.find("--chat-template-kwargs"), std::string::npos);
  }
}

TEST(ServerReasoning, HarmonyChannelsAndCalls) {
  std::shared_ptr<const Model> m;
  auto s = serve_with(kHarmonyTemplate, m);
  ASSERT_TRUE(s);
  const Json body = chat_body(
      R"(root ::= "<|channel|>analysis<|message|>Greet back.<|end|><|start|>assistant<|channel|>final<|message|>Hello!")");
  const Reply whole = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.json["choices"][0]["message"]["reasoning_content"], "Greet back.");
  EXPECT_EQ(whole.json["choices"][0]["message"]["content"], "Hello!");
  const Streamed st = stream(*s, body);
  EXPECT_EQ(st.reasoning, "Greet back.");
  EXPECT_EQ(st.content, "Hello!");

  // A call addressed to a function the request offered: tool_calls, finish_reason "tool_calls".
  Json call = chat_body(
      R"(root ::= "<|channel|>analysis<|message|>Use f.<|end|><|start|>assistant to=functions.f<|channel|>commentary json<|message|>{\"a\": [1, \"x\"]}")");
  call["tools"] = {
      {{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}};
  const Reply c = post(*s, "/v1/chat/completions", call);
  ASSERT_EQ(c.status, 200) << c.body;
  const Json& msg = c.json["choices"][0]["message"];
  EXPECT_EQ(msg["reasoning_content"], "Use f.");
  EXPECT_TRUE(msg["content"].is_null()) << c.body;
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << c.body;
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(msg["tool_calls"][0]["function"]["arguments"], R"({"a":[1,"x"]})");
  EXPECT_EQ(c.json["choices"][0]["finish_reason"], "tool_calls");
  const Streamed sc = stream(*s, call);
  EXPECT_EQ(sc.reasoning, "Use f.");
  EXPECT_EQ(sc.content, "");
  ASSERT_EQ(sc.tool_calls.size(), 1u);
  EXPECT_EQ(sc.tool_calls[0]["function"]["arguments"], R"({"a":[1,"x"]})");
  EXPECT_EQ(sc.finish, "tool_calls");

  // A forced call cannot be written by a grammar over text: 400, not a malformed reply.
  Json forced = call;
  forced.erase("grammar");
  forced["tool_choice"] = "required";
  expect_error(post(*s, "/v1/chat/completions", forced), 400, "tool_choice", "harmony");
}

}  // namespace
}  // namespace glass::server::test_http
