#pragma once
// Python `str` semantics over UTF-8 bytes, for the chat-template engine. Python strings are
// sequences of code points: length, indexing, slicing, case mapping and whitespace follow that.
// Bytes that are not valid UTF-8 decode to U+DC80..U+DCFF (Python's "surrogateescape") and encode
// back to the same byte, so no input byte is ever lost or altered.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace glass::tokenizer::chat {

std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view s);
bool is_ascii(std::string_view s);
// Number of code points (Python len()).
size_t codepoint_count(std::string_view s);

// str.isspace() for one code point (Unicode whitespace, as Python and the `\s` of Jinja's lexer).
bool is_py_space(char32_t c);
// str.strip / lstrip / rstrip: `chars` absent strips whitespace, else any of its code points.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize(): first upper, rest lower
std::string py_title(std::string_view s);       // str.title()
std::string py_swapcase(std::string_view s);
bool py_is_upper(std::string_view s);  // str.isupper(): has a cased char and none lower
bool py_is_lower(std::string_view s);
bool py_is_alpha(std::string_view s);
bool py_is_digit(std::string_view s);
bool py_is_alnum(std::string_view s);
bool py_is_space(std::string_view s);

// repr() of a str: quotes chosen as Python does, escapes for \\, \n, \r, \t, the quote, and
// non-printable code points (\xNN, \uNNNN, \UNNNNNNNN).
std::string py_repr_str(std::string_view s);
// repr()/str() of a float: shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string py_float_repr(double v);

// str.split(sep=None, maxsplit=-1), rsplit and splitlines. An empty `sep` is an error the caller
// reports. They stop past `max_parts` parts (returning max_parts + 1, which the caller refuses): a
// 10 MB string split into 10M empty strings took 1.2 GB before any bound was checked.
inline constexpr size_t kAllParts = static_cast<size_t>(-1) - 1;
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                                  size_t max_parts = kAllParts);
std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit, size_t max_parts = kAllParts);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends, size_t max_parts = kAllParts);
// str.replace(old, new, count); count < 0 replaces all. An empty `old` inserts between code points.
std::string py_replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count);
// str.find / rfind as code point indices, -1 when absent.
int64_t py_find(std::string_view s, std::string_view sub, bool reverse);
int64_t py_count(std::string_view s, std::string_view sub);

}  // namespace glass::tokenizer::chat
