// Request parsing without a model: the fields land in GenerateConfig as documented, defaults are
// the server's (random seed, generation up to the context), and the response builders write OpenAI's
// shapes, with bytes that are not UTF-8 replaced instead of failing.
#include "server/openai_request.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "glass/json.h"
#include "server/metrics.h"
#include "server/openai_response.h"

namespace glass::server {
namespace {

using Json = nlohmann::json;

constexpr ModelLimits kLimits{.vocab_size = 512, .n_ctx = 256};

TEST(OpenAiRequest, CompletionFieldsReachTheConfig) {
  CompletionRequest r;
  auto e = parse_completion_request(R"({"prompt": "Hi", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9,
      "top_k": 20, "min_p": 0.1, "seed": 42, "stop": ["a", "b"], "presence_penalty": 0.5,
      "frequency_penalty": -0.25, "logit_bias": {"2": -100, "13": 5.5}, "stream": true,
      "stream_options": {"include_usage": true}, "user": "u", "n": 1, "model": "m", "unknown_field": 3})",
                                    kLimits, r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.prompt_text, "Hi");
  const GenerateConfig& c = r.fields.config;
  EXPECT_EQ(c.max_tokens, 7);
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(c.sampling.top_p, 0.9f);
  EXPECT_EQ(c.sampling.top_k, 20);
  EXPECT_FLOAT_EQ(c.sampling.min_p, 0.1f);
  EXPECT_EQ(c.sampling.seed, 42u);
  EXPECT_EQ(c.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_FLOAT_EQ(c.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(c.sampling.frequency_penalty, -0.25f);
  ASSERT_EQ(c.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(c.sampling.logit_bias[0], (std::pair<int32_t, float>{2, -100.0f}));  // as written
  EXPECT_EQ(c.sampling.logit_bias[1], (std::pair<int32_t, float>{13, 5.5f}));
  EXPECT_TRUE(r.fields.stream);
  EXPECT_TRUE(r.fields.include_usage);
  EXPECT_EQ(r.fields.model, "m");
}

TEST(OpenAiRequest, DefaultsAndClamps) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt": [1, 2, 3], "stop": "x", "seed": null})", kLimits, r));
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(r.prompt_text);
  EXPECT_EQ(r.fields.config.max_tokens, 256);  // until the context is full
  EXPECT_EQ(r.fields.config.sampling.seed, SamplingConfig::kRandomSeed);
  EXPECT_EQ(r.fields.config.stop, (std::vector<std::string>{"x"}));
  EXPECT_FALSE(r.fields.stream);
  EXPECT_FALSE(r.fields.model);

  CompletionRequest big;
  ASSERT_FALSE(parse_completion_request(R"({"prompt": [[5, 6]], "max_tokens": 2000000000, "top_k": -1,
      "seed": -1, "temperature": 0})",
                                        kLimits, big));
  EXPECT_EQ(big.prompt_ids, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(big.fields.config.max_tokens, 256);  // a sequence cannot pass n_ctx anyway
  EXPECT_EQ(big.fields.config.sampling.top_k, -1);
  EXPECT_EQ(big.fields.config.sampling.seed, SamplingConfig::kRandomSeed);

  CompletionRequest one;
  ASSERT_FALSE(parse_completion_request(R"({"prompt": ["only"], "max_tokens": 3.0})", kLimits, one));
  EXPECT_EQ(one.prompt_text, "only");
  EXPECT_EQ(one.fields.config.max_tokens, 3);
}

TEST(OpenAiRequest, ChatMessagesAndAliases) {
  ChatRequest r;
  auto e = parse_chat_request(R"({"messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "you."}]},
      {"role": "assistant", "content": null},
      {"role": "tool", "content": "42", "name": "calc"}],
      "max_tokens": 9, "max_completion_tokens": 5})",
                              kLimits, r);
  ASSERT_FALSE(e) << e->message;
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].content, "Hello, you.");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].role, "tool");
  EXPECT_EQ(r.fields.config.max_tokens, 5);  // max_completion_tokens wins
}

// An earlier reply's thoughts go back to the template under both names templates read; the
// template's extra variables arrive as given.
TEST(OpenAiRequest, ReasoningContentAndTemplateKwargs) {
  ChatRequest r;
  auto e = parse_chat_request(R"({"messages": [
      {"role": "user", "content": "2+2?"},
      {"role": "assistant", "content": "4", "reasoning_content": "Add them."},
      {"role": "user", "content": "3+3?"}],
      "chat_template_kwargs": {"enable_thinking": false, "reasoning_effort": "low"},
      "reasoning_format": "deepseek"})",
                              kLimits, r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(Json::parse(r.messages[1].extra_json),
            Json::parse(R"({"reasoning_content": "Add them.", "thinking": "Add them."})"));
  EXPECT_EQ(Json::parse(r.template_kwargs_json),
            Json::parse(R"({"enable_thinking": false, "reasoning_effort": "low"})"));
  EXPECT_EQ(r.reasoning_format, "deepseek");
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({"messages": [{"role": "user", "content": "x", "reasoning_content": "y"}]})",
            "messages[0].reasoning_content"},
           {R"({"messages": [{"role": "assistant", "content": "x", "reasoning_content": 1}]})",
            "messages[0].reasoning_content"},
           {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": []})",
            "chat_template_kwargs"},
           {R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"tools": 1}})",
            "chat_template_kwargs.tools"},
           {R"({"messages": [{"role": "user", "content": "x"}], "reasoning_format": "hidden"})",
            "reasoning_format"}}) {
    ChatRequest bad;
    auto err = parse_chat_request(body, kLimits, bad);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->param, param) << body;
  }
}

TEST(OpenAiRequest, ErrorsNameTheirField) {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"prompt": "x", "top_p": 0})", "top_p"},
      {R"({"prompt": "x", "logit_bias": {"512": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"abc": 1}})", "logit_bias"},
      {R"({"prompt": "x", "logit_bias": {"3": 101}})", "logit_bias"},
      {R"({"prompt": "x", "seed": 1.5})", "seed"},
      {R"({"prompt": [1, 512]})", "prompt"},
      {R"({"prompt": ["a", "b"]})", "prompt"},
      {R"({"prompt": []})", "prompt"},
      {R"({"prompt": "x", "stop": ""})", "stop"},
      {R"({"prompt": "x", "stop": [1]})", "stop"},
      {R"({"prompt": "x", "stream_options": {"include_usage": 1}})", "stream_options.include_usage"},
      {R"({"prompt": "x", "echo": true})", "echo"},
      {R"({"prompt": "x", "best_of": 2})", "best_of"},
      {R"({"prompt": "x", "max_tokens": 99999999999})", "max_tokens"},
  };
  for (const Case& c : cases) {
    CompletionRequest r;
    auto e = parse_completion_request(c.body, kLimits, r);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->param, c.param) << c.body << ": " << e->message;
  }
  ChatRequest r;
  auto e = parse_chat_request(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
                              kLimits, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages[0].content[0].type");
  auto bad_json = parse_chat_request("{\"messages\": [", kLimits, r);
  ASSERT_TRUE(bad_json);
  EXPECT_EQ(bad_json->param, "");
  EXPECT_NE(bad_json->message.find("not valid JSON"), std::string::npos) << bad_json->message;
}

// Hostile bodies found by hand while writing the http_body fuzz harness: tools, tool-call arguments
// and schemas nested deep enough that copying or dumping them (into the prompt, for the grammar
// engine) would overflow the stack, and a response_format whose type is not a string beside a grammar
// (Json::value threw). Each is a 400 naming its field, or parses, never a crash.
// One assistant turn calling f with `arguments` (the text inside the JSON string).
std::optional<ApiError> parse_tool_call(const std::string& arguments, ChatRequest& out) {
  return parse_chat_request(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
      "function": {"name": "f", "arguments": ")" +
                                arguments + R"("}}]}]})",
                            kLimits, out);
}

TEST(OpenAiRequest, DeepNestingIsRefusedBeforeAnythingRecursesIntoIt) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  ChatRequest r;
  auto e =
      parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
      "function": {"name": "f", "parameters": {"type": "object", "default": )" +
                             deep + "}}}]}",
                         kLimits, r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "tools");
  EXPECT_NE(e->message.find("more than 128 deep"), std::string::npos) << e->message;
  // Arguments as an object are copied into the template's context: the same bound, naming them.
  ChatRequest obj;
  auto o = parse_chat_request(R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "function",
      "function": {"name": "f", "arguments": {"a": )" +
                                  deep + "}}}]}]}",
                              kLimits, obj);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->param, "messages[0].tool_calls[0].function.arguments") << o->message;
  // A schema is dumped for the grammar engine.
  CompletionRequest schema;
  auto sc = parse_completion_request(
      R"({"prompt": "x", "json_schema": {"type": "array", "default": )" + deep + "}}", kLimits, schema);
  ASSERT_TRUE(sc);
  EXPECT_EQ(sc->param, "json_schema") << sc->message;
  // 120 levels are fine.
  ChatRequest ok;
  const std::string nested = std::string(120, '[') + std::string(120, ']');
  ASSERT_FALSE(parse_chat_request(
      R"({"messages": [{"role": "user", "content": "x"}], "n": 1, "x": )" + nested + "}", kLimits, ok));

  // Arguments are JSON inside a string: nested past the bound they reach the template as the string.
  ChatRequest args;
  auto a = parse_tool_call(deep, args);
  ASSERT_FALSE(a) << a->message;
  ASSERT_EQ(args.messages.size(), 1u);
  const Json extra = Json::parse(args.messages[0].extra_json);
  EXPECT_TRUE(extra.at("tool_calls").at(0).at("function").at("arguments") == deep);
}

// Found by hand: nlohmann's ordered_json parse searches an object's keys for each key it adds, and
// its callback parse scans an object's members each time a member object ends, so an 8 MB body of
// 700k keys, or tool-call arguments of 400k empty objects, kept a worker busy for minutes (and the
// drain waiting). Both are read in linear time now: here in well under a second each.
TEST(OpenAiRequest, ObjectsOfManyMembersAreReadInLinearTime) {
  std::string keys;
  for (int i = 0; i < 400000; ++i) keys += fmt::format(R"({}"k{}":0)", i == 0 ? "" : ",", i);
  CompletionRequest c;
  auto e = parse_completion_request(R"({"prompt": "hi", "max_tokens": 1, "x": {)" + keys + "}}", kLimits, c);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(c.prompt_text, "hi");
  std::string args = "{";
  for (int i = 0; i < 200000; ++i) args += fmt::format(R"({}\"k{}\":{{}})", i == 0 ? "" : ",", i);
  args += "}";
  ChatRequest r;
  auto a = parse_tool_call(args, r);
  ASSERT_FALSE(a) << a->message;
  ASSERT_EQ(r.messages.size(), 1u);
  // (nlohmann's own ordered parse of this takes 30 s)
  const auto extra =
      parse_json_bounded<nlohmann::ordered_json>(r.messages[0].extra_json, "extra", {.memory_factor = 16});
  ASSERT_TRUE(extra.ok()) << extra.error().message;
  const auto& parsed = extra->at("tool_calls").at(0).at("function").at("arguments");
  ASSERT_TRUE(parsed.is_object());  // parsed as JSON, in the order given
  EXPECT_EQ(parsed.size(), 200000u);
  EXPECT_EQ(parsed.begin().key(), "k0");
  EXPECT_EQ((--parsed.end()).key(), "k199999");
}

TEST(OpenAiRequest, ResponseFormatTypeOfTheWrongTypeBesideAGrammarIs400) {
  for (const char* body : {R"({"prompt": "x", "response_format": {"type": 5}, "grammar": "root ::= \"a\""})",
                           R"({"prompt": "x", "response_format": {"type": ["text"]}, "json_schema": {}})"}) {
    CompletionRequest r;
    auto e = parse_completion_request(body, kLimits, r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400) << body;
    EXPECT_EQ(e->param, "response_format") << body << ": " << e->message;
  }
}

TEST(OpenAiResponse, ObjectsAndEventsHaveOpenAisShape) {
  const ReplyMeta meta{.endpoint = Endpoint::Chat, .id = "chatcmpl-1", .created = 7, .model = "m"};
  const Json body = Json::parse(reply_body(meta, "hi", FinishReason::Length, {3, 2}));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "hi");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 5);

  const StreamEvents ev(meta, /*include_usage=*/true);
  const std::string open = ev.opening();
  ASSERT_EQ(open.rfind("data: ", 0), 0u);
  ASSERT_EQ(open.substr(open.size() - 2), "\n\n");
  const Json first = Json::parse(open.substr(6));
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  EXPECT_TRUE(first["usage"].is_null());
  // A reply cut inside a UTF-8 sequence: U+FFFD, not an exception.
  const Json cut = Json::parse(ev.piece("caf\xC3").substr(6));
  EXPECT_EQ(cut["choices"][0]["delta"]["content"], "caf\xEF\xBF\xBD");
  const Json usage = Json::parse(ev.usage({4, 1}).substr(6));
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(StreamEvents::done(), "data: [DONE]\n\n");
}

TEST(OpenAiRequest, ToolsAndToolTurnsReachTheTemplateAsTransformersPassesThem) {
  ChatRequest r;
  auto e = parse_chat_request(R"({"messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": "{\"zeta\": 1, \"city\": \"Paris\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}}]},
      {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18C"}],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
        "parameters": {"type": "object", "properties": {"zeta": {}, "city": {"type": "string"}}}}}],
      "tool_choice": "auto", "parallel_tool_calls": true, "n": 3})",
                              kLimits, r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.fields.n, 3);
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].extra_json, "");
  // Arguments parsed into an object in the order written; a string that is not JSON stays a string.
  EXPECT_EQ(r.messages[1].extra_json,
            R"({"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":)"
            R"({"zeta":1,"city":"Paris"}}},{"id":"call_2","type":"function","function":{"name":"broken",)"
            R"("arguments":"{not json"}}]})");
  EXPECT_EQ(r.messages[2].extra_json, R"({"tool_call_id":"call_1","name":"get_weather"})");
  EXPECT_NE(r.tools_json.find(R"("properties":{"zeta":{},"city")"), std::string::npos) << r.tools_json;

  ChatRequest none;
  ASSERT_FALSE(parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none",
      "tools": [{"type": "function", "function": {"name": "f"}}]})",
                                  kLimits, none));
  EXPECT_EQ(none.tools_json, "");  // "none": the template does not see the tools
  ChatRequest empty;
  ASSERT_FALSE(
      parse_chat_request(R"({"messages": [{"role": "user", "content": "x"}], "tools": []})", kLimits, empty));
  EXPECT_EQ(empty.tools_json, "");

  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": {}})", "tools"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [5]})", "tools[0]"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "retrieval"}]})",
       "tools[0].type"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]})",
       "tools[0].function.name"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function",
          "function": {"name": "f", "parameters": []}}]})",
       "tools[0].function.parameters"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "function",
          "function": {"name": "f"}}})",
       "tool_choice"},
      {R"({"messages": [{"role": "user", "content": "x"}], "parallel_tool_calls": 1})",
       "parallel_tool_calls"},
      {R"({"messages": [{"role": "assistant", "tool_calls": {}}]})", "messages[0].tool_calls"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {R"({"messages": [{"role": "assistant", "tool_calls": [{"type": "x", "function": {"name": "f"}}]}]})",
       "messages[0].tool_calls[0].type"},
      {R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages[0].tool_calls"},
      {R"({"messages": [{"role": "tool", "content": "x", "tool_call_id": 5}]})", "messages[0].tool_call_id"},
      {R"({"messages": [{"role": "user", "content": "x"}], "n": 9})", "n"},
  };
  for (const Case& c : cases) {
    ChatRequest bad;
    auto err = parse_chat_request(c.body, kLimits, bad);
    ASSERT_TRUE(err) << c.body;
    EXPECT_EQ(err->status, 400) << c.body;
    EXPECT_EQ(err->param, c.param) << c.body << ": " << err->message;
  }
}

TEST(OpenAiResponse, ToolCallsAndChoicesHaveOpenAisShape) {
  const ReplyMeta meta{.endpoint = Endpoint::Chat, .id = "chatcmpl-1", .created = 7, .model = "m"};
  std::vector<ChoiceReply> choices = {
      {.text = "t",
       .finish = FinishReason::Stop,
       .tools = ParsedReply{.content = "\n", .calls = {{"f", R"({"a":1})"}, {"g", "{}"}}}},
      {.text = "plain", .finish = FinishReason::Length},
  };
  const Json body = Json::parse(reply_body(meta, choices, {3, 9}));
  ASSERT_EQ(body["choices"].size(), 2u);
  const Json& c0 = body["choices"][0];
  EXPECT_EQ(c0["index"], 0);
  EXPECT_EQ(c0["finish_reason"], "tool_calls");
  EXPECT_TRUE(c0["message"]["content"].is_null());  // blank text before the calls
  ASSERT_EQ(c0["message"]["tool_calls"].size(), 2u);
  const Json& call = c0["message"]["tool_calls"][0];
  EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
  EXPECT_EQ(call["id"].get<std::string>().size(), 29u);
  EXPECT_NE(call["id"], c0["message"]["tool_calls"][1]["id"]);
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "f");
  EXPECT_EQ(call["function"]["arguments"], R"({"a":1})");  // a JSON string, as OpenAI sends it
  EXPECT_EQ(body["choices"][1]["index"], 1);
  EXPECT_EQ(body["choices"][1]["message"]["content"], "plain");
  EXPECT_EQ(body["choices"][1]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["total_tokens"], 12);

  const StreamEvents ev(meta, /*include_usage=*/false);
  const std::string calls = ev.tool_calls(choices[0].tools->calls, 2);
  const size_t split = calls.find("\n\ndata: ");
  ASSERT_NE(split, std::string::npos);
  const Json delta = Json::parse(calls.substr(6, split - 6));
  EXPECT_EQ(delta["choices"][0]["index"], 2);
  EXPECT_EQ(delta["choices"][0]["delta"]["tool_calls"][1]["index"], 1);
  EXPECT_EQ(delta["choices"][0]["delta"]["tool_calls"][1]["function"]["name"], "g");
  const Json end = Json::parse(calls.substr(split + 8));
  EXPECT_EQ(end["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(Json::parse(ev.piece("x", 1).substr(6))["choices"][0]["index"], 1);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.5, 3);
  h.observe(5);
  std::string out;
  h.render(out, "x_seconds", "help");
  EXPECT_NE(out.find("x_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{le=\"1\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{le=\"+Inf\"} 5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count 5\n"), std::string::npos) << out;
}

// Routers built for vLLM (llm-d's endpoint picker) read its gauge names: the engine's counts are
// there too, usage as a fraction.
TEST(Metrics, EngineCountsUnderVllmsNamesToo) {
  Metrics m;
  const Engine::Stats s{
      .queued = 3, .running = 2, .blocks_used = 30, .blocks_free = 90, .blocks_total = 120, .block_size = 16};
  const std::string out = m.render(s, 1);
  for (const char* line : {"glass_queue_depth 3\n", "vllm:num_requests_waiting 3\n",
                           "vllm:num_requests_running 2\n", "vllm:kv_cache_usage_perc 0.25\n",
                           "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"120\"} 1\n",
                           "# TYPE vllm:lora_requests_info gauge\n"})
    EXPECT_NE(out.find(line), std::string::npos) << line << out;
}

}  // namespace
}  // namespace glass::server
