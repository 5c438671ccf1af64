// Constrained replies over HTTP: response_format json_object / json_schema, llama-server's grammar and
// json_schema fields, and tool_choice "required" / named, on the bundled stories260K model, whose
// unconstrained output is prose: whatever parses below, the constraint made it so.
#include <fstream>
#include <iterator>

#include "server/server_test_support.h"

namespace glass::server {
namespace {

using namespace test_http;

// A reply that ended on its own must satisfy the constraint; one cut off by max_tokens proves nothing.
bool ended(const Json& choice) { return choice["finish_reason"] != "length"; }

TEST(ServerConstraints, JsonObjectAndJsonSchemaRepliesParseAndMatch) {
  auto s = start();
  ASSERT_TRUE(s);
  int finished = 0;
  for (int seed = 1; seed <= 4; ++seed) {
    const Json body = {{"messages", {{{"role", "user"}, {"content", "Tell me about Lily."}}}},
                       {"max_tokens", 160},
                       {"seed", seed},
                       {"temperature", 0.8},
                       {"response_format", {{"type", "json_object"}}}};
    const Reply r = post(*s, "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const Json& c = r.json["choices"][0];
    if (!ended(c)) continue;
    ++finished;
    EXPECT_EQ(c["finish_reason"], "stop");
    const Json parsed = Json::parse(c["message"]["content"].get<std::string>(), nullptr, false);
    EXPECT_TRUE(parsed.is_object()) << c["message"]["content"];
  }
  const Json schema =
      Json::parse(R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
      "age": {"type": "integer", "minimum": 0, "maximum": 120}, "pet": {"enum": ["cat", "dog"]}},
      "required": ["name", "age", "pet"], "additionalProperties": false})");
  for (int seed = 1; seed <= 4; ++seed) {
    const Json body = {{"messages", {{{"role", "user"}, {"content", "Who is Tom?"}}}},
                       {"max_tokens", 160},
                       {"seed", seed},
                       {"temperature", 0.8},
                       {"response_format",
                        {{"type", "json_schema"},
                         {"json_schema", {{"name", "person"}, {"strict", true}, {"schema", schema}}}}}};
    const Reply r = post(*s, "/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body;
    const Json& c = r.json["choices"][0];
    if (!ended(c)) continue;
    ++finished;
    const Json v = Json::parse(c["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(v.is_object()) << c["message"]["content"];
    EXPECT_EQ(v.size(), 3u) << v;
    ASSERT_TRUE(v["name"].is_string()) << v;
    EXPECT_LE(v["name"].get<std::string>().size(), 12u) << v;
    ASSERT_TRUE(v["age"].is_number_integer()) << v;
    EXPECT_GE(v["age"].get<int64_t>(), 0);
    EXPECT_LE(v["age"].get<int64_t>(), 120);
    EXPECT_TRUE(v["pet"] == "cat" || v["pet"] == "dog") << v;
  }
  EXPECT_GE(finished, 4) << "most constrained replies end on their own";
}

TEST(ServerConstraints, GrammarAndJsonSchemaFieldsOnCompletions) {
  auto s = start();
  ASSERT_TRUE(s);
  for (int seed = 1; seed <= 3; ++seed) {
    const Reply r = post(*s, "/v1/completions",
                         Json{{"prompt", "Once upon a time"},
                              {"max_tokens", 20},
                              {"seed", seed},
                              {"temperature", 1.0},
                              {"grammar", "root ::= (\"yes\" | \"no\") \".\""}});
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string text = r.json["choices"][0]["text"];
    EXPECT_TRUE(text == "yes." || text == "no.") << text;
    EXPECT_EQ(r.json["choices"][0]["finish_reason"], "stop");
  }
  const Reply r = post(*s, "/v1/completions",
                       Json{{"prompt", "The number is"},
                            {"max_tokens", 20},
                            {"temperature", 0},
                            {"json_schema", {{"type", "integer"}, {"minimum", 10}, {"maximum", 99}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.json["choices"][0]["text"];
  ASSERT_FALSE(text.empty());
  const int64_t n = std::stoll(text);
  EXPECT_GE(n, 10);
  EXPECT_LE(n, 99);
}

TEST(ServerConstraints, SchemasAndGrammarsThatCannotBeHonouredAre400) {
  auto s = start();
  ASSERT_TRUE(s);
  const std::string user = R"({"messages": [{"role": "user", "content": "x"}], )";
  struct Case {
    std::string body;
    std::string param;
    std::string says;  // in the message
  };
  const Case cases[] = {
      {user + R"("response_format": {"type": "json_schema"}})", "response_format.json_schema", ""},
      {user + R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}}})",
       "response_format.json_schema.schema", "required"},
      {user + R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema":
          {"type": "object", "if": {"required": ["a"]}, "then": {"required": ["b"]}}}}})",
       "response_format.json_schema.schema", "if"},
      {user + R"("response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": 5}}})",
       "response_format.json_schema.schema", ""},
      {user + R"("grammar": "root ::= undefined-rule"})", "grammar", "undefined-rule"},
      {user + R"("grammar": 5})", "grammar", ""},
      {user + R"("grammar": "root ::= \"a\"", "json_schema": {"type": "string"}})", "json_schema", "one of"},
      // The bundled template shows no tool-call syntax: a call cannot be forced.
      {user + R"("tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f"}}]})",
       "tool_choice", "tool-call syntax"},
  };
  for (const Case& k : cases) {
    const Reply r = post(*s, "/v1/chat/completions", k.body);
    expect_error(r, 400, k.param, k.body);
    if (!k.says.empty() && r.json.contains("error")) {
      EXPECT_NE(r.json["error"]["message"].get<std::string>().find(k.says), std::string::npos) << r.body;
    }
  }
  EXPECT_EQ(s->engine()->stats().completed, 0);  // none of them reached the engine
}

class ServerToolChoice : public test::WithSharedFixtures {};

// A sampled chat request that must call a tool: `choice` "required" or a tool's name.
Json forced_call(const Json& tools, const std::string& choice, int seed, const std::string& content) {
  return {
      {"messages", {{{"role", "user"}, {"content", content}}}},
      {"tools", tools},
      {"max_tokens", 200},
      {"seed", seed},
      {"temperature", 0.8},
      {"parallel_tool_calls", false},
      {"tool_choice", choice == "required" ? Json("required")
                                           : Json{{"type", "function"}, {"function", {{"name", choice}}}}}};
}

// stories260K with Qwen 2.5's template (Hermes <tool_call> syntax) behind a server; null on failure.
std::unique_ptr<Server> start_with_tool_template(const std::filesystem::path& fixtures) {
  std::ifstream tin(fixtures / "templates/qwen2_5_instruct.jinja", std::ios::binary);
  const std::string source((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(source.empty());
  LoadOptions opt{.backend = "cpu", .n_ctx = 1024, .kv_size = 4096, .n_threads = 2, .chat_template = source};
  auto loaded = load_llm((test::source_dir() / "models/stories260K.gguf").string(), opt);
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  if (source.empty() || !loaded.ok()) return nullptr;
  auto s = start({}, /*attach=*/false);
  if (!s || !s->attach(*loaded).ok()) return nullptr;
  return s;
}

// Qwen 2.5's template (Hermes <tool_call> syntax) over stories260K: forced calls come back as
// tool_calls whose arguments match the function's parameters.
TEST_F(ServerToolChoice, RequiredAndNamedCallsMatchTheirParameters) {
  auto s = start_with_tool_template(fixtures_);
  ASSERT_TRUE(s);
  const Json tools = Json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"zone": {"type": "integer", "minimum": -12, "maximum": 14}}, "required": ["zone"],
        "additionalProperties": false}}}])");
  int finished = 0;
  for (const char* choice : {"required", "get_time"}) {
    for (int seed = 1; seed <= 3; ++seed) {
      const Reply r = post(*s, "/v1/chat/completions", forced_call(tools, choice, seed, "What now?"));
      ASSERT_EQ(r.status, 200) << r.body;
      const Json& c = r.json["choices"][0];
      if (!ended(c)) continue;
      ++finished;
      EXPECT_EQ(c["finish_reason"], "tool_calls") << r.body;
      ASSERT_TRUE(c["message"].contains("tool_calls")) << r.body;
      ASSERT_EQ(c["message"]["tool_calls"].size(), 1u) << r.body;
      const Json& fn = c["message"]["tool_calls"][0]["function"];
      const std::string name = fn["name"];
      if (std::string(choice) != "required") {
        EXPECT_EQ(name, choice);
      }
      const Json args = Json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      ASSERT_TRUE(args.is_object()) << fn;
      if (name == "get_weather") {
        EXPECT_EQ(args.size(), 2u) << args;
        EXPECT_TRUE(args["city"].is_string()) << args;
        EXPECT_TRUE(args["unit"] == "celsius" || args["unit"] == "fahrenheit") << args;
      } else {
        ASSERT_EQ(name, "get_time");
        ASSERT_TRUE(args["zone"].is_number_integer()) << args;
        EXPECT_GE(args["zone"].get<int64_t>(), -12);
        EXPECT_LE(args["zone"].get<int64_t>(), 14);
      }
    }
  }
  EXPECT_GE(finished, 4);
}

// Parameters as Pydantic writes them: $defs (or draft-7's definitions) and "$ref": "#/$defs/..."
// resolve against the tool's own parameters, as they do for response_format.
TEST_F(ServerToolChoice, ParametersWithDefsAndRefsResolveInTheirTool) {
  auto s = start_with_tool_template(fixtures_);
  ASSERT_TRUE(s);
  const Json tools = Json::parse(R"([
      {"type": "function", "function": {"name": "set_alarm", "parameters": {"title": "SetAlarm",
        "$defs": {"Time": {"title": "Time", "type": "object", "properties": {
          "h": {"type": "integer", "minimum": 0, "maximum": 23}, "m": {"type": "integer", "minimum": 0, "maximum": 59}},
          "required": ["h", "m"], "additionalProperties": false}},
        "type": "object", "properties": {"at": {"$ref": "#/$defs/Time"}},
        "required": ["at"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "repeat", "parameters": {
        "definitions": {"Count": {"type": "integer", "minimum": 1, "maximum": 3}},
        "type": "object", "properties": {"times": {"$ref": "#/definitions/Count"}},
        "required": ["times"], "additionalProperties": false}}}])");
  int finished = 0;
  for (const char* choice : {"required", "set_alarm", "repeat"}) {
    for (int seed = 1; seed <= 3; ++seed) {
      const Reply r = post(*s, "/v1/chat/completions", forced_call(tools, choice, seed, "Wake me up."));
      ASSERT_EQ(r.status, 200) << r.body;
      const Json& c = r.json["choices"][0];
      if (!ended(c)) continue;
      ++finished;
      ASSERT_TRUE(c["message"].contains("tool_calls")) << r.body;
      const Json& fn = c["message"]["tool_calls"][0]["function"];
      const Json args = Json::parse(fn["arguments"].get<std::string>(), nullptr, false);
      ASSERT_TRUE(args.is_object()) << fn;
      if (fn["name"] == "set_alarm") {
        ASSERT_TRUE(args["at"].is_object()) << args;
        EXPECT_EQ(args["at"].size(), 2u) << args;
        EXPECT_GE(args["at"]["h"].get<int64_t>(), 0);
        EXPECT_LE(args["at"]["h"].get<int64_t>(), 23);
        EXPECT_LE(args["at"]["m"].get<int64_t>(), 59);
      } else {
        ASSERT_EQ(fn["name"], "repeat") << fn;
        EXPECT_GE(args["times"].get<int64_t>(), 1) << args;
        EXPECT_LE(args["times"].get<int64_t>(), 3) << args;
      }
      if (std::string(choice) != "required") {
        EXPECT_EQ(fn["name"], choice);
      }
    }
  }
  EXPECT_GE(finished, 4);
}

}  // namespace
}  // namespace glass::server
