// The reasoning splitter: thoughts apart from the answer for think-tag models and gpt-oss's harmony
// messages, harmony's calls, and the same split whether the text arrives whole, in two pieces cut
// at any byte, or one byte at a time.
#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace glass::server {
namespace {

const ReplyReading kThink{.syntax = ReplySyntax::ThinkTags};
const ReplyReading kThinkOpened{.syntax = ReplySyntax::ThinkTags, .starts_in_reasoning = true};
const ReplyReading kHarmony{.syntax = ReplySyntax::Harmony};

struct Case {
  const char* name;
  ReplyReading reading;
  std::string text;
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;
};

std::vector<Case> cases() {
  return {
      {"think", kThink, "<think>\nI should greet.\n</think>\n\nHello!", "I should greet.", "Hello!", {}},
      {"think_leading_space", kThink, "\n <think>a  b</think>c", "a  b", "c", {}},
      {"think_opened_by_prompt", kThinkOpened, "\nweigh it\n</think>\n\nYes.", "weigh it", "Yes.", {}},
      {"no_think", kThink, "Hello <think>not thoughts</think>", "", "Hello <think>not thoughts</think>", {}},
      {"think_cut_by_max_tokens", kThink, "<think>half a thou", "half a thou", "", {}},
      {"think_cut_in_close_tag", kThink, "<think>abc</thi", "abc</thi", "", {}},
      {"think_empty", kThink, "<think>\n\n</think>\n\nDone.", "", "Done.", {}},
      {"think_tag_prefix_only", kThink, "<thin", "", "<thin", {}},
      {"think_closing_in_content_stays", kThink, "<think>x</think>a</think>b", "x", "a</think>b", {}},
      {"harmony",
       kHarmony,
       "<|channel|>analysis<|message|>User says hi.<|end|><|start|>assistant<|channel|>final<|message|>Hi "
       "there!",
       "User says hi.",
       "Hi there!",
       {}},
      {"harmony_final_only",
       kHarmony,
       "<|channel|>final<|message|>Only this.<|return|>",
       "",
       "Only this.",
       {}},
      {"harmony_call_after_thoughts",
       kHarmony,
       "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"location\": \"Tokyo\", \"unit\": \"c\"}",
       "Need the weather.",
       "",
       {{"get_weather", R"({"location":"Tokyo","unit":"c"})"}}},
      {"harmony_recipient_before_channel",
       kHarmony,
       " to=functions.lookup<|channel|>commentary json<|message|>{\"q\": \"a<|b\"}<|call|>",
       "",
       "",
       {{"lookup", R"({"q":"a<|b"})"}}},
      {"harmony_preamble_then_calls",
       kHarmony,
       "<|channel|>commentary<|message|>Checking both.<|end|><|start|>assistant "
       "to=functions.f<|channel|>commentary "
       "json<|message|>{}<|call|><|start|>assistant to=functions.g<|channel|>commentary "
       "json<|message|>{\"x\":1}",
       "",
       "Checking both.",
       {{"f", "{}"}, {"g", R"({"x":1})"}}},
      {"harmony_call_body_not_json",
       kHarmony,
       "<|channel|>commentary to=functions.f<|message|>not json",
       "",
       "not json",
       {}},
      {"harmony_text_with_brackets",
       kHarmony,
       "<|channel|>final<|message|>a < b, <|x|> <| end",
       "",
       "a < b, <|x|> <| end",
       {}},
      {"harmony_not_spoken",
       kHarmony,
       "Hello world, no channels here.",
       "",
       "Hello world, no channels here.",
       {}},
      {"harmony_header_never_ends",
       kHarmony,
       "<|channel|>analysis and then nothing",
       "",
       "<|channel|>analysis and then nothing",
       {}},
      {"harmony_message_marker_after_text",
       kHarmony,
       "[{\"x\"]|>analysis<|message|>Think.<|end|>",
       "",
       "[{\"x\"]|>analysis<|message|>Think.<|end|>",
       {}},  // found by the fuzzer: decided alike whole or cut
      {"harmony_header_cut_short", kHarmony, "<|chan<|message|>x", "", "<|chan<|message|>x", {}},
      {"harmony_longest_header",
       kHarmony,
       "<|channel|>" + std::string(501, 'a') + "<|message|>x",
       "",
       "x",
       {}},
      {"harmony_header_too_long",
       kHarmony,
       "<|channel|>" + std::string(502, 'a') + "<|message|>x",
       "",
       "<|channel|>" + std::string(502, 'a') + "<|message|>x",
       {}},
      {"plain", ReplyReading{}, "<think>kept</think> as written", "", "<think>kept</think> as written", {}},
  };
}

void expect_calls(const std::vector<ToolCall>& got, const std::vector<ToolCall>& want,
                  const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name) << where;
    EXPECT_EQ(got[i].arguments, want[i].arguments) << where;
  }
}

TEST(Reasoning, SplitsWholeReplies) {
  for (const Case& c : cases()) {
    const SplitReply r = split_reply(c.reading, c.text);
    EXPECT_EQ(r.parts.reasoning, c.reasoning) << c.name;
    EXPECT_EQ(r.parts.content, c.content) << c.name;
    expect_calls(r.calls, c.calls, c.name);
  }
}

// Streaming says what the whole reply says, however the text is cut: two pieces at every byte, and
// one byte per piece.
TEST(Reasoning, StreamedPiecesAddUpToTheWholeSplit) {
  for (const Case& c : cases()) {
    std::vector<std::vector<std::string>> cuts;
    for (size_t at = 0; at <= c.text.size(); ++at) cuts.push_back({c.text.substr(0, at), c.text.substr(at)});
    std::vector<std::string> bytes;
    for (char ch : c.text) bytes.emplace_back(1, ch);
    cuts.push_back(bytes);
    for (size_t k = 0; k < cuts.size(); ++k) {
      ReasoningSplitter s(c.reading);
      std::string reasoning;
      std::string content;
      for (const std::string& piece : cuts[k]) {
        const ReplyParts p = s.feed(piece);
        reasoning += p.reasoning;
        content += p.content;
      }
      const ReplyParts last = s.finish();
      reasoning += last.reasoning;
      content += last.content;
      const std::string where = std::string(c.name) + " cut " + std::to_string(k);
      EXPECT_EQ(reasoning, c.reasoning) << where;
      EXPECT_EQ(content, c.content) << where;
      expect_calls(s.calls(), c.calls, where);
    }
  }
}

// Thoughts stream as they come: nothing that cannot become a marker is held back.
TEST(Reasoning, ThoughtsAreNotHeldBack) {
  ReasoningSplitter s(kThink);
  EXPECT_EQ(s.feed("<think>").reasoning, "");
  EXPECT_EQ(s.feed("one two").reasoning, "one two");
  EXPECT_EQ(s.feed(" three </").reasoning, " three");  // the space waits for more thoughts
  const ReplyParts p = s.feed("think>Answer");
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "Answer");

  ReasoningSplitter h(kHarmony);
  EXPECT_EQ(h.feed("<|channel|>analysis<|message|>abc").reasoning, "abc");
  EXPECT_EQ(h.feed("<|").reasoning, "");  // may be <|end|>
  EXPECT_EQ(h.feed("x").reasoning, "<|x");
}

TEST(Reasoning, SyntaxAndReadingFromTheTemplateAndPrompt) {
  EXPECT_EQ(reply_syntax("{{ '<|start|>assistant<|channel|>final<|message|>' }}"), ReplySyntax::Harmony);
  EXPECT_EQ(reply_syntax("{{ '<think>\\n' + r + '\\n</think>' }}"), ReplySyntax::ThinkTags);
  EXPECT_EQ(reply_syntax("{{ messages[0].content }}"), ReplySyntax::Plain);
  EXPECT_TRUE(reply_reading(ReplySyntax::ThinkTags, ReasoningFormat::Auto, "<|im_start|>assistant\n<think>\n")
                  .starts_in_reasoning);
  EXPECT_FALSE(
      reply_reading(ReplySyntax::ThinkTags, ReasoningFormat::Auto, "assistant\n<think>\n\n</think>\n\n")
          .starts_in_reasoning);
  EXPECT_EQ(reply_reading(ReplySyntax::Harmony, ReasoningFormat::None, "").syntax, ReplySyntax::Plain);
  EXPECT_EQ(reasoning_format_named("deepseek"), ReasoningFormat::Auto);
  EXPECT_EQ(reasoning_format_named("none"), ReasoningFormat::None);
  EXPECT_FALSE(reasoning_format_named("raw").has_value());
}

}  // namespace
}  // namespace glass::server
