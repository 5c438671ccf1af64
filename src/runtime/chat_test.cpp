// Session::chat: the template renders the conversation, BOS appears once, and a later turn
// evaluates only the tokens its cache does not already hold, with the same reply as a fresh
// session fed the whole conversation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "glass/llm.h"
#include "support/fixtures.h"

namespace glass {
namespace {

// A Llama-2-like template that writes BOS itself, as most real templates do.
constexpr const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}";

std::shared_ptr<Model> load(std::string chat_template) {
  LoadOptions opt{.backend = "ref"};
  opt.chat_template = std::move(chat_template);
  auto m = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : nullptr;
}

GenerateConfig greedy(int32_t n) {
  GenerateConfig c;
  c.max_tokens = n;
  c.sampling.temperature = 0;
  return c;
}

TEST(Chat, RendersThroughTheTemplateWithOneBos) {
  auto model = load(kTemplate);
  ASSERT_TRUE(model);
  auto text = model->apply_chat_template({{"user", "Hi"}}, true);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<s>user: Hi\nassistant:");
  auto s = model->new_session();
  ASSERT_TRUE(s.ok());
  auto r = (*s)->chat({{"user", "Lily and Tom went to the park."}}, greedy(4));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto toks = (*s)->tokens();
  ASSERT_GE(toks.size(), 2u);
  EXPECT_EQ(toks[0], 1);  // tok512's BOS, once
  EXPECT_NE(toks[1], 1);
}

TEST(Chat, SecondTurnEvaluatesOnlyNewTokensAndEqualsAFreshSession) {
  auto model = load(kTemplate);
  ASSERT_TRUE(model);
  auto s = model->new_session();
  ASSERT_TRUE(s.ok());
  std::vector<ChatMessage> conv = {{"user", "Lily and Tom went to the park."}};
  auto first = (*s)->chat(conv, greedy(12));
  ASSERT_TRUE(first.ok()) << first.error().message;
  const int64_t first_prompt = first->timings.n_prompt_tokens;
  conv.push_back({"assistant", first->text});
  conv.push_back({"user", "Then they saw a big dog."});

  auto full = model->apply_chat_template(conv, true);
  ASSERT_TRUE(full.ok());
  auto full_ids = model->tokenize(*full, /*add_special=*/false, /*parse_special=*/true);
  ASSERT_TRUE(full_ids.ok());

  // What the cache shares with the new conversation: at least the whole first prompt (the sampled
  // reply may tokenize differently when re-read as text; from there on it is evaluated again).
  const std::vector<int32_t> cached_before((*s)->tokens().begin(), (*s)->tokens().end());
  const auto common = static_cast<int64_t>(
      std::mismatch(cached_before.begin(), cached_before.end(), full_ids->begin(), full_ids->end()).first -
      cached_before.begin());
  EXPECT_GE(common, first_prompt);

  const uint64_t evaluated_before = (*s)->stats().n_tokens_evaluated;
  auto second = (*s)->chat(conv, greedy(12));
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->timings.n_prompt_tokens, static_cast<int64_t>(full_ids->size()) - common);
  const uint64_t evaluated = (*s)->stats().n_tokens_evaluated - evaluated_before;
  EXPECT_EQ(evaluated, static_cast<uint64_t>(second->timings.n_prompt_tokens) + second->tokens.size() -
                           (second->finish == FinishReason::Length ? 1 : 0));
  // The session's cache now holds exactly the full conversation's tokens followed by the reply.
  const auto cached = (*s)->tokens();
  ASSERT_GE(cached.size(), full_ids->size());
  EXPECT_TRUE(std::equal(full_ids->begin(), full_ids->end(), cached.begin()));

  auto fresh = model->new_session();
  ASSERT_TRUE(fresh.ok());
  auto again = (*fresh)->chat(conv, greedy(12));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens, second->tokens);
  EXPECT_EQ(again->text, second->text);
  EXPECT_EQ(again->timings.n_prompt_tokens, static_cast<int64_t>(full_ids->size()));
}

TEST(Chat, RepeatingATurnReusesAllButTheLastToken) {
  auto model = load(kTemplate);
  ASSERT_TRUE(model);
  auto s = model->new_session();
  ASSERT_TRUE(s.ok());
  const std::vector<ChatMessage> conv = {{"user", "One day"}};
  auto a = (*s)->chat(conv, greedy(6));
  ASSERT_TRUE(a.ok());
  auto b = (*s)->chat(conv, greedy(6));  // regenerate: same prompt, cache truncated to it
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->timings.n_prompt_tokens, 1);
  EXPECT_EQ(a->tokens, b->tokens);
}

// A conversation left for another and taken up again: its blocks are still in the pool's prefix
// index, so the third chat evaluates only what follows them, and replies as a fresh session does.
TEST(Chat, ReturningToAnEarlierConversationTakesItsBlocksFromThePrefixIndex) {
  auto model = load(kTemplate);
  ASSERT_TRUE(model);
  auto s = model->new_session();
  ASSERT_TRUE(s.ok());
  std::vector<ChatMessage> a = {{"user",
                                 "Lily and Tom went to the park. They played with a ball all day "
                                 "and then they went home to eat cake with their mom."}};
  auto first = (*s)->chat(a, greedy(8));
  ASSERT_TRUE(first.ok()) << first.error().message;
  const std::vector<ChatMessage> b = {{"user", "The cat sat on the mat."}};
  ASSERT_TRUE((*s)->chat(b, greedy(8)).ok());
  EXPECT_EQ((*s)->stats().prefix_tokens_reused, 0u);  // b shares only BOS and "user:" with a

  a.push_back({"assistant", first->text});
  a.push_back({"user", "Then they slept."});
  auto text = model->apply_chat_template(a, true);
  ASSERT_TRUE(text.ok());
  auto ids = model->tokenize(*text, /*add_special=*/false, /*parse_special=*/true);
  ASSERT_TRUE(ids.ok());
  auto again = (*s)->chat(a, greedy(8));
  ASSERT_TRUE(again.ok()) << again.error().message;
  const uint64_t reused = (*s)->stats().prefix_tokens_reused;
  EXPECT_GE(reused, 32u) << "the first prompt's full blocks";
  EXPECT_EQ(reused % 16, 0u) << "whole blocks";
  EXPECT_EQ(again->timings.n_prompt_tokens, static_cast<int64_t>(ids->size() - reused));
  const auto cached = (*s)->tokens();
  ASSERT_GE(cached.size(), ids->size());
  EXPECT_TRUE(std::equal(ids->begin(), ids->end(), cached.begin()));

  auto fresh = model->new_session();
  ASSERT_TRUE(fresh.ok());
  auto want = (*fresh)->chat(a, greedy(8));
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(again->tokens, want->tokens);
  EXPECT_EQ(again->text, want->text);
}

TEST(Chat, ErrorsNameTheProblem) {
  auto none = load("");
  ASSERT_TRUE(none);
  auto s = none->new_session();
  ASSERT_TRUE(s.ok());
  auto r = (*s)->chat({{"user", "hi"}}, greedy(2));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("has no chat template"), std::string::npos) << r.error().message;

  auto broken = load("{% for m in messages %}{{ m.content }");
  ASSERT_TRUE(broken);  // a bad template does not stop plain generation
  auto s2 = broken->new_session();
  ASSERT_TRUE(s2.ok());
  auto r2 = (*s2)->chat({{"user", "hi"}}, greedy(2));
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("does not parse"), std::string::npos) << r2.error().message;

  auto raising = load("{{ raise_exception('roles must alternate') }}");
  ASSERT_TRUE(raising);
  auto s3 = raising->new_session();
  ASSERT_TRUE(s3.ok());
  auto r3 = (*s3)->chat({{"user", "hi"}}, greedy(2));
  ASSERT_FALSE(r3.ok());
  EXPECT_NE(r3.error().message.find("roles must alternate"), std::string::npos) << r3.error().message;
}

class ChatHf : public test::WithSharedFixtures {};

// An HF directory's template comes from tokenizer_config.json, and chat_template.jinja beside it
// wins, as in transformers.
TEST_F(ChatHf, TemplateComesFromTheDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "glass_chat_hf_test";
  fs::remove_all(dir);
  fs::copy(fixtures_ / "models/stories260K-hf", dir);
  std::ifstream in(dir / "tokenizer_config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  in.close();
  config["chat_template"] = "{{ bos_token }}[{{ messages[0].content }}]";
  std::ofstream(dir / "tokenizer_config.json") << config.dump();
  auto model = load_llm(dir.string(), {.backend = "ref"});
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto text = (*model)->apply_chat_template({{"user", "Hi"}}, true);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text, "<s>[Hi]");

  std::ofstream(dir / "chat_template.jinja") << "{{ messages[0].role }}";
  auto jinja = load_llm(dir.string(), {.backend = "ref"});
  ASSERT_TRUE(jinja.ok()) << jinja.error().message;
  auto text2 = (*jinja)->apply_chat_template({{"user", "Hi"}}, true);
  ASSERT_TRUE(text2.ok());
  EXPECT_EQ(*text2, "user");
  fs::remove_all(dir);
}

class ChatTools : public test::WithSharedFixtures {};

// Tools and tool turns reach the template as transformers passes them: `tools` as a top-level
// variable, each message as a dict with its tool_calls / tool_call_id. Compared byte for byte with
// the fixtures' Jinja2 renders (templates whose only special token is stories260K's own BOS "<s>").
TEST_F(ChatTools, ToolsAndToolTurnsRenderAsTransformersDoes) {
  std::ifstream cin(fixtures_ / "templates/contexts.json");
  const auto contexts = nlohmann::ordered_json::parse(cin);
  for (const char* name : {"qwen2_5_instruct", "mistral_nemo_2407"}) {
    std::ifstream tin(fixtures_ / "templates" / (std::string(name) + ".jinja"), std::ios::binary);
    const std::string source((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
    auto model = load(source);
    ASSERT_TRUE(model);
    for (const char* ctx : {"tools_available", "tool_call_roundtrip", "tool_calls_parallel"}) {
      SCOPED_TRACE(std::string(name) + "__" + ctx);
      const nlohmann::ordered_json* c = nullptr;
      for (const auto& x : contexts["contexts"])
        if (x["name"] == ctx) c = &x;
      ASSERT_NE(c, nullptr);
      std::vector<ChatMessage> messages;
      for (const auto& m : (*c)["messages"]) {
        ChatMessage msg{.role = m["role"].get<std::string>()};
        nlohmann::ordered_json extra = nlohmann::ordered_json::object();
        for (const auto& [k, v] : m.items()) {
          if (k == "role") continue;
          if (k == "content" && v.is_string())
            msg.content = v.get<std::string>();
          else
            extra[k] = v;  // tool_calls, tool_call_id, name, and a null content
        }
        if (!extra.empty()) msg.extra_json = extra.dump();
        messages.push_back(std::move(msg));
      }
      ChatTemplateInputs in{.add_generation_prompt = (*c)["add_generation_prompt"].get<bool>()};
      if ((*c)["tools"].is_array()) in.tools_json = (*c)["tools"].dump();
      auto text = model->apply_chat_template(messages, in);
      ASSERT_TRUE(text.ok()) << text.error().message;
      std::ifstream ein(fixtures_ / "templates/expected" / (std::string(name) + "__" + ctx + ".txt"),
                        std::ios::binary);
      const std::string expected((std::istreambuf_iterator<char>(ein)), std::istreambuf_iterator<char>());
      ASSERT_FALSE(expected.empty());
      EXPECT_EQ(*text, expected);
    }
  }
}

TEST(Chat, ToolInputsThatAreNotJsonAreErrorsNamingThem) {
  auto model = load("{{ tools }}{{ messages[0].x }}");
  ASSERT_TRUE(model);
  auto bad_extra = model->apply_chat_template({{.role = "user", .content = "hi", .extra_json = "[1]"}},
                                              ChatTemplateInputs{});
  ASSERT_FALSE(bad_extra.ok());
  EXPECT_NE(bad_extra.error().message.find("messages[0].extra_json"), std::string::npos);
  auto bad_tools = model->apply_chat_template({{"user", "hi"}}, ChatTemplateInputs{.tools_json = "{}"});
  ASSERT_FALSE(bad_tools.ok());
  EXPECT_NE(bad_tools.error().message.find("tools"), std::string::npos);
  auto ok = model->apply_chat_template({{.role = "user", .content = "hi", .extra_json = R"({"x": 7})"}},
                                       ChatTemplateInputs{});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "None7");  // no tools: null, as transformers passes them
}

// Template kwargs (chat_template_kwargs) are variables of their own; the renderer's are not theirs.
TEST(Chat, TemplateKwargsAreVariables) {
  auto model =
      load("{% if enable_thinking is false %}off{% else %}on{% endif %}:{{ effort | default('none') }}");
  ASSERT_TRUE(model);
  auto on = model->apply_chat_template({{"user", "hi"}}, ChatTemplateInputs{});
  ASSERT_TRUE(on.ok()) << on.error().message;
  EXPECT_EQ(*on, "on:none");
  auto off = model->apply_chat_template(
      {{"user", "hi"}}, ChatTemplateInputs{.kwargs_json = R"({"enable_thinking": false, "effort": "low"})"});
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_EQ(*off, "off:low");
  for (const char* bad : {"[1]", R"({"messages": []})", R"({"bos_token": "x"})", "{"}) {
    auto r = model->apply_chat_template({{"user", "hi"}}, ChatTemplateInputs{.kwargs_json = bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("kwarg"), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace glass
