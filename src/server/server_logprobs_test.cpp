// glass serve's log probabilities end to end (server_test_support.h): chat's `logprobs` /
// `top_logprobs` and the legacy completions' `logprobs: N` in OpenAI's shapes, each value the one the
// library gives the same request (Session::chat / glass::generate on a fresh session), greedy tokens the
// most likely of their step, streams carrying the same entries chunk by chunk; bad values are 400s
// naming their field.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "server/server_test_support.h"

namespace glass::server {
namespace {

using namespace test_http;  // NOLINT(google-build-using-namespace)
using Json = nlohmann::json;

GenerateConfig asking(GenerateConfig c, int32_t top) {
  c.logprobs = true;
  c.top_logprobs = top;
  return c;
}

// The server writes each float32 as the shortest decimal that reads back as that float.
float as_float(const Json& v) { return static_cast<float>(v.get<double>()); }

Json bytes_of(const std::string& s) {
  Json out = Json::array();
  for (const char c : s) out.push_back(static_cast<unsigned char>(c));
  return out;
}

bool ascii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

int64_t characters(const std::string& s) {
  return std::count_if(s.begin(), s.end(),
                       [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

// One chat logprobs entry ({token, logprob, bytes}) against the library's.
void expect_chat_token(const Json& j, const TokenLogprob& want, const std::string& what) {
  const std::string piece = model()->token_to_piece(want.id);
  EXPECT_EQ(j["bytes"], bytes_of(piece)) << what;
  if (ascii(piece)) {
    EXPECT_EQ(j["token"], piece) << what;  // other bytes read as U+FFFD when not UTF-8
  }
  EXPECT_EQ(as_float(j["logprob"]), want.logprob) << what;
}

TEST(ServerLogprobs, ChatLogprobsEqualSessionChatStreamedOrNot) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::vector<ChatMessage> conv = {{"user", "Lily and Tom went to the park."}};
  auto session = model()->new_session();
  auto want = (*session)->chat(conv, asking(greedy(16), kMaxTopLogprobs));
  ASSERT_TRUE(want.ok()) << want.error().message;
  ASSERT_FALSE(want->tokens.empty());

  Json body = {{"messages", {{{"role", "user"}, {"content", "Lily and Tom went to the park."}}}},
               {"temperature", 0},
               {"max_tokens", 16},
               {"logprobs", true},
               {"top_logprobs", kMaxTopLogprobs}};
  const Reply r = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json& lp = r.json["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object()) << r.body;
  EXPECT_TRUE(lp.contains("refusal") && lp["refusal"].is_null());
  const Json& content = lp["content"];
  ASSERT_EQ(content.size(), want->tokens.size());
  EXPECT_EQ(r.json["usage"]["completion_tokens"], content.size());
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string what = "token " + std::to_string(i);
    const Json& c = content[i];
    expect_chat_token(c, want->logprobs[i].token, what);
    const float lpv = as_float(c["logprob"]);
    EXPECT_LE(lpv, 0.0f) << what;
    ASSERT_EQ(c["top_logprobs"].size(), static_cast<size_t>(kMaxTopLogprobs)) << what;
    float best = -INFINITY;
    double mass = 0.0;
    for (size_t k = 0; k < c["top_logprobs"].size(); ++k) {
      const Json& t = c["top_logprobs"][k];
      expect_chat_token(t, want->logprobs[i].top[k], what + " top " + std::to_string(k));
      best = std::max(best, as_float(t["logprob"]));
      mass += std::exp(t["logprob"].get<double>());
    }
    EXPECT_EQ(lpv, best) << what << ": a greedy token is its step's most likely";
    EXPECT_LE(mass, 1.0 + 1e-5) << what;
  }

  // Streamed: each chunk of text carries its tokens' entries; together they are the whole reply's.
  body["stream"] = true;
  const Reply st = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(st.status, 200) << st.body;
  const auto events = sse_data(st.body);
  ASSERT_GE(events.size(), 3u);
  Json streamed = Json::array();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json ev = Json::parse(events[i]);
    const Json& choice = ev["choices"][0];
    const Json& delta = choice["delta"];
    if (delta.contains("role")) {
      EXPECT_TRUE(choice["logprobs"].is_null());
    }
    if (delta.contains("content") && !delta["content"].get<std::string>().empty() &&
        !delta.contains("role")) {
      ASSERT_TRUE(choice["logprobs"].is_object()) << events[i];
      EXPECT_FALSE(choice["logprobs"]["content"].empty()) << events[i];
    }
    if (choice["logprobs"].is_object())
      for (const Json& e : choice["logprobs"]["content"]) streamed.push_back(e);
  }
  EXPECT_EQ(streamed, content);
}

TEST(ServerLogprobs, CompletionLogprobsTakeTheLegacyShape) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string prompt = "Once upon a time";
  const GenerateResult want = solo(prompt, asking(greedy(20), 5));
  ASSERT_FALSE(want.tokens.empty());
  Json body = {{"prompt", prompt}, {"temperature", 0}, {"max_tokens", 20}, {"logprobs", 5}};
  const Reply r = post(*s, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json& lp = r.json["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object()) << r.body;
  const size_t n = want.tokens.size();
  ASSERT_EQ(lp["tokens"].size(), n);
  ASSERT_EQ(lp["token_logprobs"].size(), n);
  ASSERT_EQ(lp["top_logprobs"].size(), n);
  ASSERT_EQ(lp["text_offset"].size(), n);
  std::string joined;
  for (size_t i = 0; i < n; ++i) {
    const std::string what = "token " + std::to_string(i);
    const std::string piece = model()->token_to_piece(want.tokens[i]);
    if (ascii(piece)) {
      EXPECT_EQ(lp["tokens"][i], piece) << what;
    }
    const float value = as_float(lp["token_logprobs"][i]);
    EXPECT_EQ(value, want.logprobs[i].token.logprob) << what;
    EXPECT_LE(value, 0.0f) << what;
    EXPECT_EQ(lp["text_offset"][i], characters(joined)) << what;
    joined += piece;
    // The 5 most likely and the sampled token (here one of them): at most 6 keys, as OpenAI documents.
    const Json& top = lp["top_logprobs"][i];
    ASSERT_TRUE(top.is_object()) << what;
    EXPECT_GE(top.size(), 1u) << what;
    EXPECT_LE(top.size(), 6u) << what;
    float best = -INFINITY;
    double mass = 0.0;
    for (const auto& [token, v] : top.items()) {
      best = std::max(best, as_float(v));
      mass += std::exp(v.get<double>());
    }
    EXPECT_EQ(value, best) << what << ": a greedy token is its step's most likely";
    EXPECT_LE(mass, 1.0 + 1e-5) << what;
    for (const TokenLogprob& t : want.logprobs[i].top) {
      const std::string key = model()->token_to_piece(t.id);
      if (!ascii(key)) continue;
      ASSERT_TRUE(top.contains(key)) << what << ": " << key;
      EXPECT_GE(as_float(top[key]), t.logprob) << what;  // equal, or a same-text token more likely
    }
    if (ascii(piece)) {
      EXPECT_EQ(as_float(top[piece]), value) << what;
    }
  }
  EXPECT_EQ(joined, r.json["choices"][0]["text"]) << "no stop string: the tokens make the text";

  // logprobs 0: each token's own value only.
  body["logprobs"] = 0;
  const Reply zero = post(*s, "/v1/completions", body);
  ASSERT_EQ(zero.status, 200) << zero.body;
  const Json& lz = zero.json["choices"][0]["logprobs"];
  ASSERT_EQ(lz["top_logprobs"].size(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(lz["top_logprobs"][i].size(), 1u) << i;
    EXPECT_EQ(lz["top_logprobs"][i].begin().value(), lz["token_logprobs"][i]) << i;
  }
  EXPECT_EQ(lz["token_logprobs"], lp["token_logprobs"]);

  // Streamed: the chunks' lists, joined, are the whole reply's (text_offset counting on across chunks).
  body["logprobs"] = 5;
  body["stream"] = true;
  const Reply st = post(*s, "/v1/completions", body);
  ASSERT_EQ(st.status, 200) << st.body;
  const auto events = sse_data(st.body);
  Json joined_lp = {{"text_offset", Json::array()},
                    {"token_logprobs", Json::array()},
                    {"tokens", Json::array()},
                    {"top_logprobs", Json::array()}};
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json ev = Json::parse(events[i]);
    const Json& choice = ev["choices"][0];
    if (!choice["text"].get<std::string>().empty() && choice["finish_reason"].is_null()) {
      EXPECT_TRUE(choice["logprobs"].is_object()) << events[i];
    }
    if (!choice["logprobs"].is_object()) continue;
    for (auto& [key, list] : joined_lp.items())
      for (const Json& x : choice["logprobs"][key]) list.push_back(x);
  }
  EXPECT_EQ(joined_lp, lp);

  // Not asked: null, as before.
  body.erase("logprobs");
  body["stream"] = false;
  const Reply plain = post(*s, "/v1/completions", body);
  ASSERT_EQ(plain.status, 200);
  EXPECT_TRUE(plain.json["choices"][0]["logprobs"].is_null());
}

TEST(ServerLogprobs, EachChoiceCarriesItsOwn) {
  auto s = start();
  ASSERT_TRUE(s);
  const Json msgs = {{{"role", "user"}, {"content", "One day"}}};
  Json body = {{"messages", msgs}, {"temperature", 1.0}, {"max_tokens", 10}, {"seed", 11},
               {"n", 2},           {"logprobs", true},   {"top_logprobs", 3}};
  const Reply both = post(*s, "/v1/chat/completions", body);
  ASSERT_EQ(both.status, 200) << both.body;
  ASSERT_EQ(both.json["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    Json single = body;
    single["n"] = 1;
    single["seed"] = 11 + i;
    const Reply one = post(*s, "/v1/chat/completions", single);
    ASSERT_EQ(one.status, 200) << one.body;
    const Json& got = both.json["choices"][i]["logprobs"]["content"];
    const Json& want = one.json["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(got.size(), want.size()) << i;
    // Batched with the other choice, the step's logits may round differently: values within 1e-4.
    for (size_t k = 0; k < want.size(); ++k) {
      EXPECT_EQ(got[k]["token"], want[k]["token"]) << i << " " << k;
      EXPECT_NEAR(got[k]["logprob"].get<double>(), want[k]["logprob"].get<double>(), 1e-4) << i << " " << k;
      EXPECT_EQ(got[k]["top_logprobs"].size(), 3u);
    }
  }
}

TEST(ServerLogprobs, BadLogprobFieldsAre400NamingThem) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string c = "/v1/completions", chat = "/v1/chat/completions";
  const std::string m = R"("messages": [{"role": "user", "content": "x"}])";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {chat, "{" + m + R"(, "logprobs": true, "top_logprobs": 21})", "top_logprobs"},
      {chat, "{" + m + R"(, "logprobs": true, "top_logprobs": -1})", "top_logprobs"},
      {chat, "{" + m + R"(, "logprobs": true, "top_logprobs": "5"})", "top_logprobs"},
      {chat, "{" + m + R"(, "top_logprobs": 2})", "top_logprobs"},
      {chat, "{" + m + R"(, "logprobs": false, "top_logprobs": 0})", "top_logprobs"},
      {chat, "{" + m + R"(, "logprobs": 1})", "logprobs"},
      {c, R"({"prompt": "x", "logprobs": 6})", "logprobs"},
      {c, R"({"prompt": "x", "logprobs": -1})", "logprobs"},
      {c, R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {c, R"({"prompt": "x", "logprobs": 2.5})", "logprobs"},
      {c, R"({"prompt": "x", "top_logprobs": 2})", "top_logprobs"},
  };
  for (const auto& [path, body, param] : cases) expect_error(post(*s, path, body), 400, param, body);
  // Harmless spellings of "off" stay accepted.
  EXPECT_EQ(post(*s, chat, "{" + m + R"(, "logprobs": false, "max_tokens": 2})").status, 200);
  EXPECT_EQ(post(*s, c, std::string(R"({"prompt": "x", "logprobs": false, "max_tokens": 2})")).status, 200);
  EXPECT_EQ(post(*s, c, std::string(R"({"prompt": "x", "logprobs": null, "max_tokens": 2})")).status, 200);
}

}  // namespace
}  // namespace glass::server
