// GenerateConfig::constraint end to end on a random-weight model whose unconstrained output is
// noise: generate, generate_batch and the Engine follow the grammar (greedy and sampled), stop when
// the grammar is complete, and fail — never fall back to an unconstrained token — when the grammar
// allows nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "glass/engine.h"
#include "glass/grammar.h"
#include "glass/llm.h"
#include "json_vocab_model.h"

namespace glass {
namespace {

class Constrained : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = load_llm(test::write_json_vocab_model().string(), {});
    ASSERT_TRUE(m.ok()) << m.error().message;
    model_ = *m;
  }
  static void TearDownTestSuite() { model_.reset(); }
  static GenerateConfig config(std::shared_ptr<const Constraint> c, float temperature, uint64_t seed = 1) {
    GenerateConfig cfg;
    cfg.max_tokens = 2000;
    cfg.sampling.temperature = temperature;
    cfg.sampling.top_k = 0;
    cfg.sampling.top_p = 1.0f;
    cfg.sampling.min_p = 0.0f;
    cfg.sampling.seed = seed;
    cfg.constraint = std::move(c);
    return cfg;
  }
  static inline std::shared_ptr<Model> model_;
};

constexpr const char* kSchema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":8},
  "age":{"type":"integer","minimum":0,"maximum":120},"tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},
  "required":["name","age"],"additionalProperties":false})";

void expect_valid(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << text;
  ASSERT_TRUE(j.is_object()) << text;
  ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << text;
  EXPECT_LE(j["name"].get<std::string>().size(), 8u * 4) << text;
  ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer()) << text;
  EXPECT_GE(j["age"].get<int>(), 0);
  EXPECT_LE(j["age"].get<int>(), 120);
  for (const auto& [k, v] : j.items()) EXPECT_TRUE(k == "name" || k == "age" || k == "tags") << text;
}

TEST_F(Constrained, UnconstrainedOutputIsNoise) {
  auto s = model_->new_session();
  ASSERT_TRUE(s.ok());
  auto r = generate(**s, std::vector<int32_t>{1}, config(nullptr, 1.0f));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(nlohmann::json::parse(r->text, nullptr, false).is_discarded()) << r->text;
}

TEST_F(Constrained, GenerateFollowsASchemaGreedyAndSampled) {
  auto c = Constraint::from_json_schema(kSchema);
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (const float t : {0.0f, 1.0f}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      auto s = model_->new_session();
      ASSERT_TRUE(s.ok());
      auto r = generate(**s, std::vector<int32_t>{1}, config(*c, t, seed));
      ASSERT_TRUE(r.ok()) << r.error().message;
      ASSERT_EQ(r->finish, FinishReason::Stop) << r->text;
      expect_valid(r->text);
      if (t == 0.0f) break;  // greedy: one run is the run
    }
  }
}

TEST_F(Constrained, GbnfAndRegexConstraints) {
  auto g = Constraint::from_gbnf(R"(root ::= "answer: " ("yes" | "no") "!")");
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto s = model_->new_session();
  auto r = generate(**s, std::vector<int32_t>{1}, config(*g, 1.0f));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->finish, FinishReason::Stop);  // only the end is left after "!": stopped, not sampled
  EXPECT_TRUE(r->text == "answer: yes!" || r->text == "answer: no!") << r->text;
  auto re = Constraint::from_regex("[0-9]{3}-[a-c]+");
  ASSERT_TRUE(re.ok()) << re.error().message;
  auto s2 = model_->new_session();
  auto r2 = generate(**s2, std::vector<int32_t>{1}, config(*re, 1.0f, 3));
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->finish, FinishReason::Stop);
  ASSERT_GE(r2->text.size(), 5u);
  EXPECT_EQ(r2->text[3], '-') << r2->text;
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(r2->text[i]))) << r2->text;
  for (size_t i = 4; i < r2->text.size(); ++i)
    EXPECT_TRUE(r2->text[i] >= 'a' && r2->text[i] <= 'c') << r2->text;
}

TEST_F(Constrained, JsonObjectMode) {
  auto c = Constraint::json_object();
  ASSERT_TRUE(c.ok());
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    auto s = model_->new_session();
    auto r = generate(**s, std::vector<int32_t>{1}, config(*c, 1.0f, seed));
    ASSERT_TRUE(r.ok()) << r.error().message;
    if (r->finish != FinishReason::Stop) continue;
    auto j = nlohmann::json::parse(r->text, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r->text;
  }
}

TEST_F(Constrained, BatchAndEngineKeepOneStatePerSequence) {
  auto c = Constraint::from_json_schema(kSchema);
  ASSERT_TRUE(c.ok());
  std::vector<GenerateConfig> cfgs;
  std::vector<std::vector<int32_t>> prompts;
  for (uint64_t i = 0; i < 4; ++i) {
    cfgs.push_back(config(*c, 1.0f, 10 + i));
    prompts.push_back({1});
  }
  auto batch = generate_batch(*model_, prompts, cfgs);
  ASSERT_TRUE(batch.ok()) << batch.error().message;
  for (const auto& r : *batch) {
    ASSERT_EQ(r.finish, FinishReason::Stop) << r.text;
    expect_valid(r.text);
  }
  // The same seeds alone give the same texts: the sequences' grammar states never mix.
  for (size_t i = 0; i < 4; ++i) {
    auto s = model_->new_session();
    auto r = generate(**s, prompts[i], cfgs[i]);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->text, (*batch)[i].text);
  }
  auto engine = Engine::create(model_, {});
  ASSERT_TRUE(engine.ok()) << engine.error().message;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < 4; ++i) {
    auto h = (*engine)->submit({prompts[i], cfgs[i]});
    ASSERT_TRUE(h.ok());
    handles.push_back(*h);
  }
  for (size_t i = 0; i < 4; ++i) {
    auto r = handles[i]->wait();
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->text, (*batch)[i].text);
  }
}

TEST_F(Constrained, NothingAllowedIsAnErrorNotAnUnconstrainedToken) {
  // Every allowed token banned by logit_bias: the sampler would pick a banned one; generation fails.
  auto c = Constraint::from_gbnf(R"(root ::= "{" [a-z]+ "}")");
  ASSERT_TRUE(c.ok());
  GenerateConfig cfg = config(*c, 1.0f);
  const auto open = model_->tokenize("{", false, false);
  ASSERT_TRUE(open.ok());
  for (int32_t id = 0; id < model_->info().vocab_size; ++id)
    if (model_->token_to_piece(id) == "{" || model_->token_to_piece(id) == "{\"")
      cfg.sampling.logit_bias.push_back({id, -INFINITY});
  auto s = model_->new_session();
  auto r = generate(**s, std::vector<int32_t>{1}, cfg);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("constraint"), std::string::npos) << r.error().message;
  // The same through the engine and generate_batch: the request fails, the others are unaffected.
  auto engine = Engine::create(model_, {});
  ASSERT_TRUE(engine.ok());
  auto bad = (*engine)->submit({{1}, cfg});
  auto good = (*engine)->submit({{1}, config(*c, 1.0f)});
  ASSERT_TRUE(bad.ok() && good.ok());
  auto rb = (*bad)->wait();
  ASSERT_FALSE(rb.ok());
  EXPECT_NE(rb.error().message.find("constraint"), std::string::npos) << rb.error().message;
  auto rg = (*good)->wait();
  ASSERT_TRUE(rg.ok()) << rg.error().message;
  EXPECT_EQ(rg->finish, FinishReason::Stop);
  auto batch = generate_batch(*model_, {{1}, {1}}, {config(*c, 1.0f), cfg});
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.error().message.find("constraint"), std::string::npos) << batch.error().message;
  // A grammar that can end but whose end tokens are not end tokens for this config.
  auto e = Constraint::from_gbnf(R"(root ::= "x" | "xy")");
  ASSERT_TRUE(e.ok());
  GenerateConfig no_eog = config(*e, 0.0f);
  no_eog.stop_at_end_of_generation = false;
  auto s2 = model_->new_session();
  auto r2 = generate(**s2, std::vector<int32_t>{1}, no_eog);
  // "x" then only "y" is possible (end not allowed), then the grammar is complete: stop.
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2->text, "xy");
  EXPECT_EQ(r2->finish, FinishReason::Stop);
}

TEST_F(Constrained, BadConstraintsAreErrors) {
  EXPECT_FALSE(Constraint::from_gbnf("root ::= undefined").ok());
  EXPECT_FALSE(Constraint::from_json_schema(R"({"type":"string","format":"idn-email"})").ok());
  EXPECT_FALSE(Constraint::from_regex("(?=x)").ok());
  auto c = Constraint::from_json_schema(R"({"type":"integer","minimum":3,"maximum":5})");
  ASSERT_TRUE(c.ok());
  EXPECT_NE((*c)->gbnf().find("root ::="), std::string::npos);
}

// What a client may send that no generation can follow is refused when the constraint is made, naming
// why, instead of failing at the first step (issue 51's probe: these were 500s mid-request).
TEST_F(Constrained, UnmatchableConstraintsAreRefusedWhenMade) {
  const auto refused = [](const Result<std::shared_ptr<const Constraint>>& c, const std::string& why) {
    ASSERT_FALSE(c.ok()) << why;
    EXPECT_NE(c.error().message.find(why), std::string::npos) << c.error().message;
  };
  refused(Constraint::from_json_schema(R"({"$ref":"#"})"), "$ref '#' only refers on to itself");
  refused(Constraint::from_json_schema(R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},
      "$ref":"#/$defs/a"})"),
          "only refers on to itself");
  refused(Constraint::from_gbnf("root ::= x\nx ::= \"a\" x"), "matches no string");
  refused(Constraint::from_regex("((a{0,1000}){0,1000}){0,1000}"), "too ambiguous");
  std::vector<std::string> consts;
  for (int i = 0; i < 6000; ++i) consts.push_back(fmt::format(R"({{"const":"v{}"}})", i));
  refused(Constraint::from_json_schema(fmt::format(R"({{"anyOf":[{}]}})", fmt::join(consts, ","))),
          "too ambiguous");
  std::vector<std::string> words;
  for (int i = 0; i < 11000; ++i) words.push_back(fmt::format("\"w{}\"", i));
  refused(Constraint::from_gbnf(fmt::format("root ::= {}", fmt::join(words, " | "))), "too ambiguous");
  // An enum of 10^5 values is one trie, not 10^5 alternatives; a recursive schema that can end is fine.
  std::vector<int> values(100000);
  for (int i = 0; i < 100000; ++i) values[static_cast<size_t>(i)] = i;
  auto big = Constraint::from_json_schema(fmt::format(R"({{"enum":[{}]}})", fmt::join(values, ",")));
  ASSERT_TRUE(big.ok()) << big.error().message;
  auto s = model_->new_session();
  ASSERT_TRUE(s.ok());
  auto r = generate(**s, std::vector<int32_t>{1}, config(*big, 1.0f, 7));
  ASSERT_TRUE(r.ok()) << r.error().message;
  if (r->finish == FinishReason::Stop) {
    const auto v = nlohmann::json::parse(r->text, nullptr, false);
    ASSERT_TRUE(v.is_number_integer()) << r->text;
    EXPECT_LT(v.get<int64_t>(), 100000) << r->text;
  }
  EXPECT_TRUE(Constraint::from_json_schema(
                  R"({"type":"object","properties":{"next":{"$ref":"#"}},"additionalProperties":false})")
                  .ok());
}

// Objects of thousands of optional members: what is generated is a valid object of them, in order
// (3,500 such members failed mid-generation with "allowed token did not advance the grammar").
TEST_F(Constrained, ObjectsOfThousandsOfOptionalMembers) {
  for (const int n : {1500, 3500}) {
    nlohmann::ordered_json props = nlohmann::ordered_json::object();
    for (int i = 0; i < n; ++i) props[fmt::format("m{}", i)] = {{"type", "integer"}};
    const std::string required = fmt::format("m{}", n / 2);
    const nlohmann::ordered_json schema = {
        {"type", "object"}, {"properties", props}, {"required", {required}}, {"additionalProperties", false}};
    auto c = Constraint::from_json_schema(schema.dump());
    ASSERT_TRUE(c.ok()) << c.error().message;
    int parsed = 0;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto s = model_->new_session();
      ASSERT_TRUE(s.ok());
      auto r = generate(**s, std::vector<int32_t>{1}, config(*c, 1.0f, seed));
      ASSERT_TRUE(r.ok()) << r.error().message;
      if (r->finish != FinishReason::Stop) continue;  // cut by max_tokens: nothing to parse
      auto j = nlohmann::ordered_json::parse(r->text, nullptr, /*allow_exceptions=*/false);
      ASSERT_TRUE(j.is_object()) << r->text;
      ++parsed;
      EXPECT_TRUE(j.contains(required)) << r->text;
      int last = -1;
      for (const auto& [k, v] : j.items()) {
        ASSERT_EQ(k[0], 'm') << r->text;
        const int i = std::stoi(k.substr(1));
        EXPECT_GT(i, last) << "members out of order: " << r->text;
        last = i;
        EXPECT_TRUE(v.is_number_integer()) << r->text;
      }
    }
    EXPECT_GT(parsed, 0) << n << " members: every reply was cut by max_tokens";
  }
}

}  // namespace
}  // namespace glass
