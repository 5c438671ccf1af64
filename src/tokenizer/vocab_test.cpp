// apply_special_token_rules: llama.cpp's end-of-generation and control-token rules.
#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

namespace glass::tokenizer {
namespace {

Vocab make(std::initializer_list<const char*> texts) {
  Vocab v;
  v.model = "llama";
  for (const char* t : texts) {
    v.tokens.push_back(t);
    v.scores.push_back(0);
    v.types.push_back(TokenType::Normal);
  }
  return v;
}

TEST(SpecialTokenRules, EosEotEomAndEogTextsJoinTheSet) {
  Vocab v = make({"<unk>", "<s>", "</s>", "<|end|>", "<|user|>", "hello", "<|eom_id|>", "<|fim_pad|>"});
  v.eos_id = 2;
  SpecialTokenIds ids;
  ids.eot = 5;  // given by metadata: joins the set though its text is ordinary
  apply_special_token_rules(v, ids);
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{2, 3, 5, 6, 7}));
  // Found by text: forced to Control. Given by id: type untouched.
  EXPECT_EQ(v.types[3], TokenType::Control);
  EXPECT_EQ(v.types[6], TokenType::Control);
  EXPECT_EQ(v.types[7], TokenType::Control);
  EXPECT_EQ(v.types[2], TokenType::Control);
  EXPECT_EQ(v.types[5], TokenType::Normal);
  EXPECT_EQ(v.types[4], TokenType::Normal);
}

TEST(SpecialTokenRules, FimMarkersBecomeControlButNotEog) {
  Vocab v = make({"a", "<PRE>", "<SUF>", "<MID>", "<|file_sep|>"});
  apply_special_token_rules(v, {});
  EXPECT_EQ(v.types[1], TokenType::Control);
  EXPECT_EQ(v.types[2], TokenType::Control);
  EXPECT_EQ(v.types[3], TokenType::Control);
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{4}));
}

TEST(SpecialTokenRules, HarmonyEndIsNotEog) {
  Vocab v = make({"<|return|>", "<|call|>", "<|end|>", "<|channel|>", "<|endoftext|>"});
  v.eos_id = 4;
  apply_special_token_rules(v, {});
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{0, 1, 4}));
  EXPECT_EQ(v.types[2], TokenType::UserDefined);
  EXPECT_EQ(v.types[3], TokenType::UserDefined);
}

TEST(SpecialTokenRules, Gemma4SlashSIsNormal) {
  Vocab v = make({"<eos>", "</s>", "<|tool_response>"});
  v.eos_id = 0;
  apply_special_token_rules(v, {});
  EXPECT_EQ(v.eog_ids, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(v.types[1], TokenType::Normal);
}

TEST(SpecialTokenRules, OutOfRangeIdsAreIgnored) {
  Vocab v = make({"a", "b"});
  v.eos_id = 7;
  SpecialTokenIds ids;
  ids.eot = 99;
  ids.fim_pad = -4;
  apply_special_token_rules(v, ids);
  EXPECT_TRUE(v.eog_ids.empty());
}

}  // namespace
}  // namespace glass::tokenizer
