// JSON Schema keywords beyond the first set: multipleOf, fractional and exclusive number bounds,
// pattern with minLength / maxLength, the ipv4 / ipv6 / hostname / uri formats, leap days,
// patternProperties, propertyNames and uniqueItems, checked exhaustively where the domain is small
// (the corpus test checks them against python3-jsonschema).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_strings.h"
#include "grammar/matches_test_support.h"

namespace glass::grammar {
namespace {

Grammar schema(const std::string& s) {
  auto text = json_schema_to_gbnf(s);
  EXPECT_TRUE(text.ok()) << s << ": " << text.error().message;
  if (!text.ok()) return {};
  auto g = compile_gbnf(*text);
  EXPECT_TRUE(g.ok()) << *text << "\n" << g.error().message;
  return g.ok() ? std::move(*g) : Grammar{};
}

using support::matches;

TEST(JsonSchemaKeywords, MultipleOfIsExactOverARange) {
  for (const int m : {1, 2, 3, 7, 10, 12, 25}) {
    for (const auto& [lo, hi] :
         {std::pair{-150, 290}, std::pair{5, 5}, std::pair{-999, -1}, std::pair{0, 1000}}) {
      bool has = false;
      for (int x = lo; x <= hi; ++x) has = has || x % m == 0;
      if (!has) continue;
      const Grammar g =
          schema(fmt::format(R"({{"type":"integer","multipleOf":{},"minimum":{},"maximum":{}}})", m, lo, hi));
      for (int x = -1100; x <= 1100; ++x) {
        const bool want = x >= lo && x <= hi && x % m == 0;
        EXPECT_EQ(matches(g, std::to_string(x)), want) << m << " " << lo << ".." << hi << ": " << x;
      }
    }
  }
  const Grammar u = schema(R"({"type":"integer","multipleOf":9})");
  EXPECT_TRUE(matches(u, "999999999999999"));
  EXPECT_TRUE(matches(u, "-18"));
  EXPECT_TRUE(matches(u, "0"));
  EXPECT_FALSE(matches(u, "00"));
  EXPECT_FALSE(matches(u, "19"));
  EXPECT_FALSE(matches(u, "18.0"));
  EXPECT_FALSE(matches(u, "99999999999999999"));  // 17 digits: beyond the integers the grammar writes
  auto none = json_schema_to_gbnf(R"({"type":"integer","multipleOf":10,"minimum":1,"maximum":9})");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no multiple of 10"), std::string::npos) << none.error().message;
}

// Every text the grammar accepts must satisfy the bounds both as an exact decimal and as the double
// a validator reads; the listed texts must be accepted.
void check_decimal(const std::string& s, double lo, bool lo_excl, double hi, bool hi_excl,
                   const std::vector<std::string>& accepted, const std::vector<std::string>& refused) {
  const Grammar g = schema(s);
  for (const auto& t : accepted) EXPECT_TRUE(matches(g, t)) << s << ": " << t;
  for (const auto& t : refused) EXPECT_FALSE(matches(g, t)) << s << ": " << t;
  for (int i = -4000; i <= 4000; ++i)
    for (const char* fmt_s : {"{}", "{}.{:02}", "{}.{:03}1", "{}.{:016}"}) {
      const int w = i / 100, f = std::abs(i % 100);
      std::string t = fmt::format(fmt::runtime(fmt_s), std::abs(w), f);
      if (i < 0) t = "-" + t;
      if (!matches(g, t)) continue;
      const double v = std::strtod(t.c_str(), nullptr);
      EXPECT_TRUE(lo_excl ? v > lo : v >= lo) << s << ": " << t;
      EXPECT_TRUE(hi_excl ? v < hi : v <= hi) << s << ": " << t;
    }
}

TEST(JsonSchemaKeywords, FractionalAndExclusiveNumberBounds) {
  check_decimal(R"({"type":"number","minimum":0.5})", 0.5, false, INFINITY, false,
                {"0.5", "0.50", "0.51", "1", "12.25", "0.5000000000000001"},
                {"0.49", "0.4999", "0", "-1", "0.05"});
  check_decimal(R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})", 0, true, 1, true,
                {"0.5", "0.0001", "0.9999999", "0.0000000000000001"}, {"0", "0.0", "1", "1.0", "-0.1", "-0"});
  check_decimal(R"({"type":"number","minimum":-2.75,"maximum":3.14})", -2.75, false, 3.14, false,
                {"-2.75", "-2.7", "0", "3.14", "3.1", "3", "-0.5", "3.1400"},
                {"3.15", "-2.76", "3.141", "4", "-3"});
  check_decimal(R"({"type":"number","exclusiveMaximum":-0.5})", -INFINITY, false, -0.5, true,
                {"-0.6", "-1", "-100.5", "-0.5001"}, {"-0.5", "-0.50", "0", "-0.49"});
  check_decimal(R"({"type":"number","minimum":0.1,"maximum":0.3})", 0.1, false, 0.3, false,
                {"0.1", "0.2", "0.3", "0.15"}, {"0.09", "0.31", "0.30000000000000001"});
  check_decimal(R"({"$schema":"http://json-schema.org/draft-04/schema#","type":"number","minimum":1,
      "exclusiveMinimum":true,"maximum":2,"exclusiveMaximum":true})",
                1, true, 2, true, {"1.5", "1.0001"}, {"1", "2", "1.0", "2.0"});
  const Grammar i = schema(R"({"type":"integer","minimum":0.5,"exclusiveMaximum":10.5})");
  for (int x = -20; x <= 20; ++x) EXPECT_EQ(matches(i, std::to_string(x)), x >= 1 && x <= 10) << x;
}

TEST(JsonSchemaKeywords, PatternWithLengths) {
  const Grammar a = schema(R"({"type":"string","pattern":"^[a-z]+$","maxLength":5})");
  for (const char* ok : {"\"a\"", "\"abcde\""}) EXPECT_TRUE(matches(a, ok)) << ok;
  for (const char* bad : {"\"\"", "\"abcdef\"", "\"aB\""}) EXPECT_FALSE(matches(a, bad)) << bad;
  const Grammar r =
      schema(R"({"type":"string","pattern":"^[A-Z]{3}-[0-9]{4}$","minLength":8,"maxLength":20})");
  EXPECT_TRUE(matches(r, "\"ABC-1234\""));
  const Grammar s = schema(R"({"type":"string","pattern":"[0-9]","minLength":2,"maxLength":4})");
  EXPECT_TRUE(matches(s, "\"12\""));
  EXPECT_FALSE(matches(s, "\"12345\""));
  EXPECT_FALSE(matches(s, "\"1\""));
  // Lengths count code points: an escape or a multi-byte character is one.
  const Grammar d = schema(R"({"type":"string","pattern":"^.{1,2}$","minLength":2})");
  EXPECT_TRUE(matches(d, "\"\\té\""));
  EXPECT_FALSE(matches(d, "\"é\""));
  auto range = pattern_length_range("\"ab\" [0-9]{2,5}", "[a-z]");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->min, 4u);
  ASSERT_TRUE(range->max.has_value());
  EXPECT_EQ(*range->max, 7u);
}

TEST(JsonSchemaKeywords, Formats) {
  const Grammar v4 = schema(R"({"format":"ipv4","type":"string"})");
  for (int x = 0; x <= 300; ++x) EXPECT_EQ(matches(v4, fmt::format("\"1.{}.3.4\"", x)), x <= 255) << x;
  for (const char* bad : {"\"01.2.3.4\"", "\"1.2.3\"", "\"1.2.3.4.5\""})
    EXPECT_FALSE(matches(v4, bad)) << bad;
  const Grammar v6 = schema(R"({"format":"ipv6","type":"string"})");
  for (const char* ok : {"\"::\"", "\"::1\"", "\"fe80::\"", "\"1:2:3:4:5:6:7:8\""})
    EXPECT_TRUE(matches(v6, ok)) << ok;
  for (const char* bad : {"\":::\"", "\"1::2::\"", "\"1:2:3:4:5:6:7:8:9\"", "\"12345::\""})
    EXPECT_FALSE(matches(v6, bad)) << bad;
  const Grammar h = schema(R"({"format":"hostname","type":"string"})");
  for (const char* ok : {"\"localhost\"", "\"a-b.example.com\""}) EXPECT_TRUE(matches(h, ok)) << ok;
  for (const char* bad : {"\"-a.com\"", "\"a..b\"", "\"a-.com\"", "\"1.2.3.4\""})
    EXPECT_FALSE(matches(h, bad)) << bad;
  const Grammar u = schema(R"({"format":"uri","type":"string"})");
  EXPECT_TRUE(matches(u, "\"https://example.com:8080/a/%20b?x=1&y=2#f\""));
  for (const char* bad : {"\"example.com\"", "\"http://a b\"", "\"http://a/%zz\""})
    EXPECT_FALSE(matches(u, bad)) << bad;
  const Grammar d = schema(R"({"format":"date","type":"string"})");
  for (int y : {1996, 2000, 2004, 2024, 2400, 1600})
    EXPECT_TRUE(matches(d, fmt::format("\"{}-02-29\"", y))) << y;
  for (int y : {1900, 2100, 2023, 2001, 1000}) EXPECT_FALSE(matches(d, fmt::format("\"{}-02-29\"", y))) << y;
  for (int y = 1000; y <= 9999; ++y) {
    const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    EXPECT_EQ(matches(d, fmt::format("\"{}-02-29\"", y)), leap) << y;
  }
}

TEST(JsonSchemaKeywords, PatternPropertiesPropertyNamesUniqueItems) {
  const Grammar p = schema(R"({"type":"object","properties":{"x_n":{"type":"integer"},"m":{"type":"integer"}},
      "patternProperties":{"^x_":{"maximum":10}},"additionalProperties":false})");
  EXPECT_TRUE(matches(p, R"({"x_n":10,"m":11})"));
  EXPECT_FALSE(matches(p, R"({"x_n":11})"));
  const Grammar only = schema(R"({"type":"object","patternProperties":{"^[a-z]+$":{"type":"boolean"}}})");
  EXPECT_TRUE(matches(only, R"({"ab":true,"c":false})"));
  EXPECT_FALSE(matches(only, R"({"Ab":true})"));
  EXPECT_FALSE(matches(only, R"({"ab":1})"));
  const Grammar n =
      schema(R"({"type":"object","properties":{"id":{"type":"integer"},"toolong":{"type":"integer"}},
      "propertyNames":{"maxLength":3}})");
  EXPECT_TRUE(matches(n, R"({"id":1})"));
  EXPECT_FALSE(matches(n, R"({"id":1,"toolong":2})"));
  auto req = json_schema_to_gbnf(R"({"type":"object","properties":{"toolong":{}},"required":["toolong"],
      "propertyNames":{"maxLength":3}})");
  ASSERT_FALSE(req.ok());
  EXPECT_NE(req.error().message.find("#/propertyNames: required property 'toolong'"), std::string::npos)
      << req.error().message;
  const Grammar closed = schema(R"({"type":"object","additionalProperties":false})");
  EXPECT_TRUE(matches(closed, "{ }"));
  EXPECT_FALSE(matches(closed, R"({"a":1})"));
  const Grammar none = schema(R"({"type":"object","properties":{"a":{}},"propertyNames":false})");
  EXPECT_TRUE(matches(none, "{}"));
  EXPECT_FALSE(matches(none, R"({"a":1})"));
  const Grammar u = schema(R"({"type":"array","items":{"type":"integer"},"uniqueItems":true,"maxItems":1})");
  EXPECT_TRUE(matches(u, "[7]"));
  EXPECT_FALSE(matches(u, "[7,7]"));
  // Few item values: every order of every subset within the counts, no repeats.
  const Grammar e =
      schema(R"({"type":"array","items":{"enum":["a","b",3,3.0]},"uniqueItems":true,"minItems":1,
      "maxItems":2})");
  for (const char* ok : {"[\"a\"]", "[3]", "[\"b\",\"a\"]", "[3, \"a\"]"}) EXPECT_TRUE(matches(e, ok)) << ok;
  for (const char* bad : {"[]", "[\"a\",\"a\"]", "[3,3.0]", "[3,3]", "[\"a\",\"b\",3]"})
    EXPECT_FALSE(matches(e, bad)) << bad;
  const Grammar b = schema(R"({"type":"array","items":{"type":"boolean"},"uniqueItems":true})");
  EXPECT_TRUE(matches(b, "[true,false]"));
  EXPECT_FALSE(matches(b, "[true,false,true]"));
}

}  // namespace
}  // namespace glass::grammar
