#include "core/json_bounded.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "support/counting_new.h"

namespace glass {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string object_of_keys(int n, const std::string& tail = "") {
  std::string text = "{";
  for (int i = 0; i < n; ++i) text += fmt::format(R"({}"k{}":{})", i == 0 ? "" : ",", i, i);
  return text + tail + "}";
}

template <class J>
void expect_last_value_at_first_place(int members) {
  // "k1" repeats at the end: its value is the last, its place the first.
  auto v = parse_json_bounded<J>(object_of_keys(members, R"(,"k1":"again")"), "t");
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->size(), static_cast<size_t>(members));
  EXPECT_EQ((*v)["k1"], "again");
  EXPECT_EQ((*v)["k0"], 0);
  EXPECT_EQ((*v)[fmt::format("k{}", members - 1)], members - 1);
  if constexpr (std::is_same_v<J, ordered_json>) {
    int i = 0;
    for (const auto& [key, value] : v->items()) EXPECT_EQ(key, fmt::format("k{}", i++));
  }
}

TEST(JsonBounded, RepeatedKeysKeepTheLastValueAtTheFirstPlace) {
  // Below and above the members an ordered object scans before it builds an index.
  for (int n : {3, 32, 33, 1000}) {
    expect_last_value_at_first_place<ordered_json>(n);
    expect_last_value_at_first_place<json>(n);
  }
  // As nlohmann's own parse has it.
  const std::string text = R"({"b": 1, "a": {"x": [1, {"y": 2}], "x": 3}, "b": {"c": null}})";
  EXPECT_EQ(*parse_json_bounded<ordered_json>(text, "t"), ordered_json::parse(text));
  EXPECT_EQ(*parse_json_bounded<json>(text, "t"), json::parse(text));
}

TEST(JsonBounded, RefusedRepeatedKeysAreNamedByTheirPointer) {
  const JsonBounds refuse{.refuse_repeated_keys = true};
  auto nested =
      parse_json_bounded<json>(R"({"a": {"b": 1, "c": [{"d": 1, "e": 2, "d": 3}]}})", "f.json", refuse);
  ASSERT_FALSE(nested.ok());
  EXPECT_EQ(nested.error().code, ErrorCode::InvalidFile);
  EXPECT_EQ(nested.error().message, "f.json: key '/a/c/d' appears twice in one object");
  // In an ordered object large enough to be indexed, and past a nested object that repeats nothing.
  auto big = parse_json_bounded<ordered_json>(object_of_keys(100, R"(,"z":{"k1":1},"k7":0)"), "g", refuse);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "g: key '/k7' appears twice in one object");
  EXPECT_TRUE(parse_json_bounded<ordered_json>(object_of_keys(100), "g", refuse).ok());
}

TEST(JsonBounded, ManyKeysOfOneOrderedObjectAreRead) {
  // nlohmann's ordered_json parse searches the keys before each key it adds: 700k keys of an 8 MB
  // request body took minutes; appended with an index, this takes well under a second.
  constexpr int kKeys = 500000;
  auto v = parse_json_bounded<ordered_json>(object_of_keys(kKeys), "body", {.memory_factor = 16});
  ASSERT_TRUE(v.ok()) << v.error().message;
  ASSERT_EQ(v->size(), static_cast<size_t>(kKeys));
  EXPECT_EQ(v->begin().key(), "k0");
  EXPECT_EQ((--v->end()).key(), fmt::format("k{}", kKeys - 1));
  EXPECT_EQ(v->at("k123456"), 123456);
}

TEST(JsonBounded, MemoryIsBoundedWhileParsing) {
  std::string zeros = "[0";
  for (int i = 0; i < (8 << 20); ++i) zeros += ",0";
  zeros += "]";
  // 16 MiB of text would be ~400 MB of values as counted (an element thrice, for the vector's
  // growth): refused past 48 MiB + the text's size, having held at most that.
  const auto before = static_cast<int64_t>(test::live_bytes());
  test::reset_peak_bytes();
  auto refused = parse_json_bounded<json>(zeros, "zeros.json");
  const int64_t peak = static_cast<int64_t>(test::peak_bytes()) - before;
  EXPECT_LE(peak, static_cast<int64_t>(zeros.size()) + (int64_t{48} << 20));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::CapacityExceeded);
  EXPECT_NE(refused.error().message.find("zeros.json: 16777219 bytes of JSON would take more than"),
            std::string::npos)
      << refused.error().message;
  auto allowed = parse_json_bounded<json>(zeros, "zeros.json", {.memory_factor = 30});
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_EQ(allowed->size(), static_cast<size_t>((8 << 20) + 1));
}

TEST(JsonBounded, NestingIsCheckedOnTheTextUnlessTheCallerWalksIt) {
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  auto refused = parse_json_bounded<ordered_json>(deep, "d.json");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("d.json: JSON nested more than 128 deep"), std::string::npos)
      << refused.error().message;
  auto walked = parse_json_bounded<ordered_json>(deep, "d.json", {.max_depth = 0});
  ASSERT_TRUE(walked.ok()) << walked.error().message;
  EXPECT_TRUE(parse_json_bounded<json>(deep, "d.json", {.max_depth = 200}).ok());
}

TEST(JsonBounded, MalformedTextIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "line 1, column 1: the text ends where a value was expected"},
      {"{", "line 1, column 2: the text ends where a string key was expected"},
      {R"({"a" 1})", "line 1, column 6: expected ':' after the key, found '1'"},
      {"[1,]", "line 1, column 4: expected a value, found ']'"},
      {"{} {}", "line 1, column 4: expected the end of the text after the value, found '{'"},
      {"\"\xff\"", "line 1, column 2: a string holds bytes that are not UTF-8"},
      {"[\n  tru", "line 2, column 6: the text ends inside 'true'"},
      {"[1, \"\\q\"]", "line 1, column 7: expected an escape"}};
  for (const auto& [text, message] : cases) {
    auto v = parse_json_bounded<json>(text, "x.json");
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.error().code, ErrorCode::InvalidFile);
    EXPECT_TRUE(v.error().message.starts_with("x.json: not valid JSON: " + message)) << v.error().message;
  }
  auto scalar = parse_json_bounded<ordered_json>(" 12.5 ", "s");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(*scalar, 12.5);
}

}  // namespace
}  // namespace glass
