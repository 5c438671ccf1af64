// Every (template, context) pair of ../shared/fixtures/templates renders byte-identical to what
// Python Jinja2 (set up as transformers sets it up) rendered, or fails where it failed, with the
// same message for the template's own raise_exception() errors and the same Python exception type
// otherwise.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fixtures.h"
#include "tokenizer/chat/chat_template.h"

namespace glass::tokenizer::chat {
namespace {

using json = nlohmann::ordered_json;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class ChatTemplateFixtures : public glass::test::WithSharedFixtures {
 protected:
  void SetUp() override {
    WithSharedFixtures::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    dir_ = fixtures_ / "templates";
    templates_ = json::parse(slurp(dir_ / "templates.json"));
    contexts_ = json::parse(slurp(dir_ / "contexts.json"));
    index_ = json::parse(slurp(dir_ / "expected" / "index.json"));
  }

  static RenderOptions fixed_clock() {
    RenderOptions o;
    const std::tm now = *parse_datetime("2026-01-01T00:00:00");
    o.clock = [now] { return now; };
    return o;
  }

  std::filesystem::path dir_;
  json templates_, contexts_, index_;
};

TEST_F(ChatTemplateFixtures, EveryPairMatchesJinja2) {
  std::map<std::string, const json*> contexts;
  for (const auto& c : contexts_["contexts"]) contexts[c["name"].get<std::string>()] = &c;
  std::map<std::string, std::pair<ChatTemplate, json>> templates;
  for (const auto& t : templates_["templates"]) {
    const std::string source = slurp(dir_ / t["file"].get<std::string>());
    ASSERT_EQ(source.size(), t["bytes"].get<size_t>()) << t["file"];
    auto parsed = ChatTemplate::parse(source);
    ASSERT_TRUE(parsed) << t["name"] << ": " << parsed.error().message;
    templates.emplace(t["name"].get<std::string>(), std::make_pair(std::move(*parsed), t["variables"]));
  }
  ASSERT_EQ(templates.size(), 17u);

  int rendered = 0, identical = 0, expected_errors = 0, errors_reproduced = 0;
  for (const auto& r : index_["renders"]) {
    const std::string name = r["template"].get<std::string>() + "__" + r["context"].get<std::string>();
    const auto& [tmpl, defaults] = templates.at(r["template"].get<std::string>());
    auto vars = variables_from_context(*contexts.at(r["context"].get<std::string>()), defaults);
    ASSERT_TRUE(vars) << name << ": " << vars.error().message;
    auto out = tmpl.render(*vars, fixed_clock());
    if (r["status"] == "ok") {
      ++rendered;
      const std::string expected = slurp(dir_ / "expected" / r["file"].get<std::string>());
      if (!out) {
        ADD_FAILURE() << name << ": " << out.error().message;
        continue;
      }
      EXPECT_EQ(*out, expected) << name;
      identical += *out == expected;
    } else {
      ++expected_errors;
      const std::string type = r["error_type"].get<std::string>();
      const std::string want = type + ": " + r["message"].get<std::string>();
      if (out) {
        ADD_FAILURE() << name << ": rendered, expected " << want;
        continue;
      }
      // raise_exception() messages come from the template itself: the same text. Python's own
      // TypeErrors: the same exception type (glass words most of them the same way too).
      const bool same = type == "TemplateError" ? ends_with(out.error().message, want)
                                                : out.error().message.find(type + ": ") != std::string::npos;
      EXPECT_TRUE(same) << name << ": got '" << out.error().message << "', want '" << want << "'";
      errors_reproduced += same;
    }
  }
  EXPECT_EQ(rendered, 198);
  EXPECT_EQ(expected_errors, 23);
  EXPECT_EQ(identical, rendered);
  EXPECT_EQ(errors_reproduced, expected_errors);
  std::printf("chat templates: %d/%d renders identical, %d/%d expected errors reproduced\n", identical,
              rendered, errors_reproduced, expected_errors);
}

TEST_F(ChatTemplateFixtures, RenderingIsRepeatable) {
  // One parsed template serves many renders (and threads): rendering never changes it.
  const std::string source = slurp(dir_ / "gpt_oss.jinja");
  auto t = ChatTemplate::parse(source);
  ASSERT_TRUE(t) << t.error().message;
  const json& ctx = contexts_["contexts"][7];  // tools_available
  auto vars = variables_from_context(ctx, json::object());
  ASSERT_TRUE(vars);
  auto first = t->render(*vars, fixed_clock());
  auto second = t->render(*vars, fixed_clock());
  ASSERT_TRUE(first && second);
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace glass::tokenizer::chat
