// UTF-8 decoding and repair, character classes, and GPT-2's byte <-> character map.
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

namespace glass::tokenizer::unicode {
namespace {

TEST(Unicode, DecodeAndRepair) {
  EXPECT_EQ(decode("\xE2\x96\x81", 0).cp, 0x2581u);
  EXPECT_FALSE(decode("\xC0\x80", 0).valid);      // overlong
  EXPECT_FALSE(decode("\xED\xA0\x80", 0).valid);  // surrogate
  EXPECT_EQ(first_invalid("ok\xF0\x9F\x98"), 2u);
  EXPECT_EQ(first_invalid("ok \xF0\x9F\x98\x81"), std::string_view::npos);
  // Rust's from_utf8_lossy: a truncated sequence is one U+FFFD, a stray byte another.
  EXPECT_EQ(lossy("a\xF0\x9F\x98"
                  "b\x80"
                  "c"),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c");
  EXPECT_EQ(lossy("\xE0\xA0"), "\xEF\xBF\xBD");
  EXPECT_EQ(lossy("\xE0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // E0 80 is no prefix of a valid sequence
}

TEST(Unicode, Classes) {
  EXPECT_TRUE(is_white_space(0x85));
  EXPECT_TRUE(is_white_space(0x3000));
  EXPECT_FALSE(is_white_space(0x200B));
  EXPECT_TRUE(is_letter(0x4E2D));
  EXPECT_TRUE(is_number(0x0664));  // ARABIC-INDIC DIGIT FOUR
  EXPECT_TRUE(is_punctuation(0x3002));
  EXPECT_TRUE(is_nonspacing_mark(0x0301));
  EXPECT_TRUE(is_word('_'));
  EXPECT_FALSE(is_word('-'));
  EXPECT_TRUE(is_bert_punctuation('$'));  // ASCII symbols count as punctuation for BERT
}

TEST(Unicode, ByteLevelMap) {
  // Printable bytes are themselves; space, newline and the rest move above U+00FF.
  EXPECT_EQ(byte_to_char('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_to_char(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(byte_to_char('\n'), 0x10Au);  // "Ċ"
  for (int b = 0; b < 256; ++b) EXPECT_EQ(char_to_byte(byte_to_char(static_cast<uint8_t>(b))), b);
  EXPECT_EQ(char_to_byte(0x2581), -1);
  EXPECT_EQ(bytes_to_chars(" \xC3\xA9"), "\xC4\xA0\xC3\x83\xC2\xA9");
}

TEST(Unicode, NormalizeAndLower) {
  EXPECT_EQ(normalize("e\xCC\x81", Form::Nfc).value(), "\xC3\xA9");
  EXPECT_EQ(normalize("", Form::Nfd).value(), "");
  EXPECT_FALSE(normalize("\xFF", Form::Nfc).ok());
  EXPECT_EQ(to_lower("ÀB\xFF"), "àb\xFF");
}

}  // namespace
}  // namespace glass::tokenizer::unicode
