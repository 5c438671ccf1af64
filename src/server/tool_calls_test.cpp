// Reading tool calls back out of generated text, per template family, and the streaming filter
// that keeps calls from being streamed as content.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "support/fixtures.h"

namespace glass::server {
namespace {

using Json = nlohmann::json;

// Arguments compared as JSON values: the parser re-serializes them.
void expect_call(const ToolCall& c, const std::string& name, const std::string& args) {
  EXPECT_EQ(c.name, name);
  EXPECT_EQ(Json::parse(c.arguments), Json::parse(args)) << c.arguments;
}

TEST(ToolCalls, HermesBlocksSeveralWithNestedJsonAndEscapes) {
  const std::string text =
      "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"opts\": {\"units\": [\"c\", \"f\"], \"deep\": {\"x\": 1}}}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"say\", \"arguments\": {\"text\": \"he said \\\"hi\\\" "
      "</tool\"}}\n</tool_call>";
  auto r = parse_tool_calls(ToolFamily::Hermes, text);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->content, "Let me look.\n");
  ASSERT_EQ(r->calls.size(), 2u);
  expect_call(r->calls[0], "get_weather",
              R"({"city": "Paris", "opts": {"units": ["c", "f"], "deep": {"x": 1}}})");
  expect_call(r->calls[1], "say", R"({"text": "he said \"hi\" </tool"})");
  // Arguments keep the order the model wrote them in.
  EXPECT_EQ(r->calls[0].arguments.substr(0, 8), "{\"city\":");
  auto bare =
      parse_tool_calls(ToolFamily::Hermes, "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->content, "");
  ASSERT_EQ(bare->calls.size(), 1u);
  expect_call(bare->calls[0], "f", "{}");
}

TEST(ToolCalls, HermesMalformedIsPlainText) {
  for (const char* text : {
           "no calls here",
           "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}",               // cut off
           "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}\n</tool_call>",  // bad JSON
           "<tool_call>\n{\"arguments\": {}}\n</tool_call>",                          // no name
           "<tool_call>\n{\"name\": \"f\", \"arguments\": 5}\n</tool_call>",   // arguments not an object
           "<tool_call>\n{\"name\": \"f\"}\n</tool_call> and then more text",  // text after the calls
       })
    EXPECT_FALSE(parse_tool_calls(ToolFamily::Hermes, text)) << text;
}

// A reply nesting its arguments past the JSON bound (server/json_bound.h) is text, not a call: the
// arguments would be dumped recursively (found by hand while writing the http_body harness).
TEST(ToolCalls, ArgumentsNestedPastTheBoundArePlainText) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string args = "{\"name\": \"f\", \"arguments\": {\"a\": " + deep + "}}";
  EXPECT_FALSE(parse_tool_calls(ToolFamily::Hermes, "<tool_call>\n" + args + "\n</tool_call>"));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::Llama3, args));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::Mistral, "[TOOL_CALLS] [" + args + "]"));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::Mistral, "[TOOL_CALLS]f[ARGS]{\"a\": " + deep + "}"));
  // 100 levels are arguments like any other.
  const std::string nested = std::string(100, '[') + std::string(100, ']');
  auto r = parse_tool_calls(ToolFamily::Llama3, "{\"name\": \"f\", \"parameters\": {\"a\": " + nested + "}}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->calls.size(), 1u);
  expect_call(r->calls[0], "f", "{\"a\": " + nested + "}");
}

TEST(ToolCalls, Llama3JsonIsTheWholeReply) {
  auto r = parse_tool_calls(
      ToolFamily::Llama3,
      " {\"name\": \"search\", \"parameters\": {\"q\": \"a \\\"b\\\"\", \"n\": {\"k\": [1]}}}\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->content, "");
  ASSERT_EQ(r->calls.size(), 1u);
  expect_call(r->calls[0], "search", R"({"q": "a \"b\"", "n": {"k": [1]}})");
  auto tagged = parse_tool_calls(ToolFamily::Llama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}");
  ASSERT_TRUE(tagged);
  expect_call(tagged->calls[0], "f", "{}");
  auto several = parse_tool_calls(
      ToolFamily::Llama3, R"([{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {"y": 2}}])");
  ASSERT_TRUE(several);
  ASSERT_EQ(several->calls.size(), 2u);
  expect_call(several->calls[1], "b", R"({"y": 2})");
  for (const char* text :
       {"The answer is {\"name\": \"f\"}", "{\"name\": \"f\", \"parameters\": {}} trailing",
        "{\"parameters\": {}}", "{\"name\": \"f\", \"parameters\": {", "plain"})
    EXPECT_FALSE(parse_tool_calls(ToolFamily::Llama3, text)) << text;
}

TEST(ToolCalls, MistralArrayAndNamedArgsForms) {
  auto r = parse_tool_calls(
      ToolFamily::Mistral,
      "Sure. [TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"s\": \"x\\\"y\", \"o\": {\"p\": "
      "[1, {\"q\": null}]}}}, {\"name\": \"b\", \"arguments\": \"{\\\"z\\\": 3}\"}]");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->content, "Sure. ");
  ASSERT_EQ(r->calls.size(), 2u);
  expect_call(r->calls[0], "a", R"({"s": "x\"y", "o": {"p": [1, {"q": null}]}})");
  expect_call(r->calls[1], "b", R"({"z": 3})");  // arguments given as a JSON string
  auto small = parse_tool_calls(ToolFamily::Mistral,
                                "[TOOL_CALLS]get[ARGS]{\"a\": {\"b\": 1}}[TOOL_CALLS]put[ARGS]{}");
  ASSERT_TRUE(small);
  ASSERT_EQ(small->calls.size(), 2u);
  expect_call(small->calls[0], "get", R"({"a": {"b": 1}})");
  expect_call(small->calls[1], "put", "{}");
  for (const char* text : {"[TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {}}", "[TOOL_CALLS] []",
                           "[TOOL_CALLS] [5]", "[TOOL_CALLS] hello", "[TOOL_CALLS]f[ARGS]{", "no calls"})
    EXPECT_FALSE(parse_tool_calls(ToolFamily::Mistral, text)) << text;
  // Families do not read each other's syntax.
  EXPECT_FALSE(parse_tool_calls(ToolFamily::None, "<tool_call>{\"name\": \"f\"}</tool_call>"));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::Mistral, "<tool_call>{\"name\": \"f\"}</tool_call>"));
}

// Qwen3-Coder / Qwen 3.5: a value is the parameter's text when its schema says string, JSON where it
// parses otherwise; a value holding the closing tag mid-line is read whole; <tool_call> may be missing.
TEST(ToolCalls, QwenXmlParametersTypedByTheToolSchema) {
  const std::string tools =
      R"([{"type": "function", "function": {"name": "search", "parameters": {"type": "object",
      "properties": {"zip": {"type": "string"}, "limit": {"type": "integer"}, "filters": {"type": "object"},
      "note": {"type": "string"}}}}}])";
  const std::string text =
      "I'll search.\n\n<tool_call>\n<function=search>\n<parameter=zip>\n02139\n</parameter>\n"
      "<parameter=limit>\n5\n</parameter>\n<parameter=filters>\n{\"open\": true}\n</parameter>\n"
      "<parameter=note>\nline one\nsays </parameter> inline\n</parameter>\n</function>\n</tool_call>\n"
      "<function=search>\n<parameter=query>\nnull\n</parameter>\n</function>\n";
  auto r = parse_tool_calls(ToolFamily::QwenXml, text, tools);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->content, "I'll search.\n\n");
  ASSERT_EQ(r->calls.size(), 2u);
  expect_call(
      r->calls[0], "search",
      R"({"zip": "02139", "limit": 5, "filters": {"open": true}, "note": "line one\nsays </parameter> inline"})");
  expect_call(r->calls[1], "search", R"({"query": null})");  // no schema for it: JSON where it parses
  // Without the tools, typed by what the text parses as.
  auto untyped = parse_tool_calls(ToolFamily::QwenXml,
                                  "<tool_call>\n<function=f>\n<parameter=a>\n007x\n"
                                  "</parameter>\n<parameter=b>\n7\n</parameter>\n</function>\n</tool_call>");
  ASSERT_TRUE(untyped);
  expect_call(untyped->calls[0], "f", R"({"a": "007x", "b": 7})");
  // Cut off, or text after the calls: plain text.
  EXPECT_FALSE(parse_tool_calls(ToolFamily::QwenXml, "<tool_call>\n<function=f>\n<parameter=a>\n1"));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::QwenXml,
                                "<tool_call>\n<function=f>\n</function>\n</tool_call>\nand more"));
  EXPECT_FALSE(parse_tool_calls(ToolFamily::QwenXml, "<function=>\n</function>"));
  auto empty =
      parse_tool_calls(ToolFamily::QwenXml, "<tool_call>\n<function=now>\n</function>\n</tool_call>");
  ASSERT_TRUE(empty);
  expect_call(empty->calls[0], "now", "{}");

  ToolCallFilter f(ToolFamily::QwenXml);
  std::string streamed;
  for (char c : text) streamed += f.feed(std::string_view(&c, 1));
  EXPECT_EQ(streamed, r->content);
  ToolCallFilter bare(ToolFamily::QwenXml);
  EXPECT_EQ(bare.feed("ok <func"), "ok ");
  EXPECT_EQ(bare.feed("tion=f>"), "");
}

TEST(ToolCalls, FilterStreamsOnlyTheTextBeforeTheCalls) {
  const std::string text = "Hi <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  // Byte by byte: a marker split over pieces is still held back whole.
  ToolCallFilter f(ToolFamily::Hermes);
  std::string streamed;
  for (char c : text) streamed += f.feed(std::string_view(&c, 1));
  EXPECT_EQ(streamed, "Hi ");
  EXPECT_EQ(streamed + f.held(), text);
  EXPECT_EQ(parse_tool_calls(ToolFamily::Hermes, text)->content, streamed);

  ToolCallFilter plain(ToolFamily::Hermes);
  EXPECT_EQ(plain.feed("a <tool"), "a ");  // "<tool" may begin a marker
  EXPECT_EQ(plain.feed("s> b"), "<tools> b");

  ToolCallFilter llama(ToolFamily::Llama3);
  EXPECT_EQ(llama.feed("  "), "");
  EXPECT_EQ(llama.feed("{\"name\""), "");
  EXPECT_EQ(llama.held(), "  {\"name\"");
  ToolCallFilter prose(ToolFamily::Llama3);
  EXPECT_EQ(prose.feed(" Hello"), " Hello");
  EXPECT_EQ(prose.feed(" {x}"), " {x}");  // calls are the whole reply: later braces are text

  ToolCallFilter mistral(ToolFamily::Mistral);
  EXPECT_EQ(mistral.feed("ok [TOOL"), "ok ");
  EXPECT_EQ(mistral.feed("_CALLS] [{}]"), "");
  EXPECT_EQ(mistral.held(), "[TOOL_CALLS] [{}]");
  ToolCallFilter none(ToolFamily::None);
  EXPECT_EQ(none.feed("<tool_call>"), "<tool_call>");
}

class ToolFamilies : public test::WithSharedFixtures {};

TEST_F(ToolFamilies, FromTheFixtureTemplates) {
  const std::pair<const char*, ToolFamily> cases[] = {
      {"qwen2_5_instruct", ToolFamily::Hermes},
      {"qwen3", ToolFamily::Hermes},
      {"smollm3", ToolFamily::Hermes},
      {"llama3_1_instruct", ToolFamily::Llama3},
      {"llama3_2_instruct", ToolFamily::Llama3},
      {"mistral_nemo_2407", ToolFamily::Mistral},
      {"mistral_small_3_2", ToolFamily::Mistral},
      {"llama3_instruct", ToolFamily::None},
      {"gemma3_it", ToolFamily::None},
      {"phi3_mini", ToolFamily::None},
  };
  for (const auto& [name, family] : cases) {
    std::ifstream in(fixtures_ / "templates" / (std::string(name) + ".jinja"), std::ios::binary);
    ASSERT_TRUE(in) << name;
    const std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(tool_family(t), family) << name;
  }
}

}  // namespace
}  // namespace glass::server
