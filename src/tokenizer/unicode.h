#pragma once
// Unicode helpers the tokenizers share: UTF-8 decoding and repair, character classes (through
// utf8proc's tables), normalization forms, lowercasing, and GPT-2's byte <-> character mapping.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "glass/result.h"

namespace glass::tokenizer::unicode {

constexpr uint32_t kReplacement = 0xFFFD;

// One decoded character: `valid` is false for a byte that does not start a complete, well-formed
// sequence (then cp = kReplacement and len = 1).
struct Char {
  uint32_t cp;
  uint32_t len;
  bool valid;
};
Char decode(std::string_view s, size_t pos);
void append(std::string& out, uint32_t cp);
// The offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t first_invalid(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal ill-formed subsequence becomes one U+FFFD.
std::string lossy(std::string_view s);
// Length of the UTF-8 sequence a lead byte announces, from its high nibble (continuation and invalid
// bytes count as one), as llama.cpp's unicode_len_utf8.
size_t lead_length(char c);

// Character classes (Unicode general categories from utf8proc).
bool is_white_space(uint32_t cp);      // the White_Space property (Rust char::is_whitespace, Oniguruma \s)
bool is_letter(uint32_t cp);           // L*
bool is_number(uint32_t cp);           // N* (Rust char::is_numeric)
bool is_punctuation(uint32_t cp);      // P*
bool is_symbol(uint32_t cp);           // S*
bool is_mark(uint32_t cp);             // M*
bool is_nonspacing_mark(uint32_t cp);  // Mn
bool is_other(uint32_t cp);            // C* (Cc, Cf, Cs, Co, Cn)
bool is_word(uint32_t cp);             // Rust regex \w: letters, marks, decimal digits, connector punctuation
bool is_bert_punctuation(uint32_t cp);  // ASCII punctuation or P* (HF BertPreTokenizer)

enum class Form { Nfc, Nfd, Nfkc, Nfkd };
// Fails (InvalidArgument) on ill-formed UTF-8.
Result<std::string> normalize(std::string_view s, Form form);
// Full lowercase mapping as Rust's str::to_lowercase (simple mappings, plus U+0130 -> "i\u0307");
// ill-formed bytes are copied unchanged.
std::string to_lower(std::string_view s);
uint32_t to_lower(uint32_t cp);  // the simple mapping

// GPT-2's reversible byte -> character map (HF ByteLevel, llama.cpp unicode_byte_to_utf8): printable
// bytes map to themselves, the other 68 to U+0100.. in byte order.
uint32_t byte_to_char(uint8_t b);
// The byte a character stands for, or -1 when it is not in the map.
int char_to_byte(uint32_t cp);
// Every byte of `s` as its GPT-2 character.
std::string bytes_to_chars(std::string_view s);

}  // namespace glass::tokenizer::unicode
