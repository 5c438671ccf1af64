// Request parsing without a model: the fields land in GenerateConfig as documented, defaults are
// the server's (random seed, generation up to the context), and the response builders write OpenAI's
// shapes, with bytes that are not UTF-8 replaced instead of failing.
#include "server/openai_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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
  EXPECT_EQ(c.sampling.logit_bias[0], (std::pair<int32_t, float>{13, 5.5f}));  // object keys in order
  EXPECT_EQ(c.sampling.logit_bias[1], (std::pair<int32_t, float>{2, -100.0f}));
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

}  // namespace
}  // namespace glass::server
