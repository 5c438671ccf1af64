// JSON Schema -> grammar: what each keyword accepts and rejects, exact numeric ranges, and errors
// that name the keyword and path (the corpus test covers realistic schemas end to end).
#include "grammar/json_schema.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "grammar/automaton.h"
#include "grammar/gbnf.h"
#include "grammar/regex.h"

namespace glass::grammar {
namespace {

struct Compiled {
  Grammar g;
  bool matches(std::string_view s) const {
    Automaton a(g);
    int32_t st = a.start_state(g.start);
    for (const char c : s) {
      st = a.next(st, static_cast<uint8_t>(c));
      if (st == Automaton::kDead) return false;
    }
    return a.can_end(st);
  }
};

std::string fmt_range(int lo, int hi) {
  return "{\"type\":\"integer\",\"minimum\":" + std::to_string(lo) + ",\"maximum\":" + std::to_string(hi) +
         "}";
}

Compiled schema(std::string_view s) {
  auto text = json_schema_to_gbnf(s);
  EXPECT_TRUE(text.ok()) << s << ": " << text.error().message;
  if (!text.ok()) return {};
  auto g = compile_gbnf(*text);
  EXPECT_TRUE(g.ok()) << *text << "\n" << g.error().message;
  return {g.ok() ? std::move(*g) : Grammar{}};
}

TEST(JsonSchema, ObjectsWithRequiredAndOptionalMembers) {
  const Compiled c = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
      "c":{"type":"boolean"}},"required":["b"],"additionalProperties":false})");
  EXPECT_TRUE(c.matches(R"({"b":"x"})"));
  EXPECT_TRUE(c.matches(R"({"a":1,"b":"x","c":true})"));
  EXPECT_TRUE(c.matches(R"({ "a": -5, "b": "", "c": false})"));
  EXPECT_TRUE(c.matches(R"({"b":"x", "c":true})"));
  EXPECT_FALSE(c.matches(R"({})"));
  EXPECT_FALSE(c.matches(R"({"a":1})"));
  EXPECT_FALSE(c.matches(R"({"a":1,,"b":"x"})"));
  EXPECT_FALSE(c.matches(R"({,"b":"x"})"));
  EXPECT_FALSE(c.matches(R"({"b":"x",})"));
  EXPECT_FALSE(c.matches(R"({"b":1})"));
  EXPECT_FALSE(c.matches(R"({"b":"x","d":1})"));
}

// Members chosen by their keys (tries over segments): order kept, each at most once, required ones
// present, commas only between members, for objects small and large.
TEST(JsonSchema, ManyOptionalMembersKeepOrderAndRequired) {
  for (const int n : {1, 2, 7, 40, 3000}) {
    std::string props;
    for (int i = 0; i < n; ++i) props += fmt::format(R"({}"k{}":{{"type":"integer"}})", i ? "," : "", i);
    const int req = n / 2;
    const Compiled c = schema(fmt::format(R"({{"type":"object","properties":{{{}}},"required":["k{}"],
        "additionalProperties":false}})",
                                          props, req));
    const auto kv = [](int i) { return fmt::format(R"("k{}":{})", i, i); };
    const auto obj = [&](std::initializer_list<int> members) {
      std::vector<std::string> parts;
      for (const int i : members) parts.push_back(kv(i));
      return fmt::format("{{{}}}", fmt::join(parts, ","));
    };
    EXPECT_TRUE(c.matches(obj({req}))) << n;
    EXPECT_FALSE(c.matches("{}")) << n;
    if (n > 2) {
      EXPECT_TRUE(c.matches(obj({0, req, n - 1}))) << n;
      EXPECT_FALSE(c.matches(obj({n - 1, req}))) << n;  // out of order
      EXPECT_FALSE(c.matches(obj({0, n - 1}))) << n;    // required left out
      EXPECT_FALSE(c.matches(obj({req, req}))) << n;    // twice
      EXPECT_FALSE(c.matches(obj({0, 0, req}))) << n;
      EXPECT_FALSE(c.matches(fmt::format("{{{},}}", kv(req)))) << n;
      EXPECT_FALSE(c.matches(fmt::format(R"({{"k{}":1,{}}})", n, kv(req)))) << n;  // undeclared
    }
  }
  // Keys sharing prefixes and non-ASCII keys, all optional.
  const Compiled u = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"},
      "é":{"type":"integer"},"éa":{"type":"integer"},"日本":{"type":"integer"}}})");
  EXPECT_TRUE(u.matches("{}"));
  EXPECT_TRUE(u.matches(R"({"a":1,"ab":2,"é":3,"éa":4,"日本":5})"));
  EXPECT_TRUE(u.matches(R"({"ab":2,"日本":5})"));
  EXPECT_FALSE(u.matches(R"({"ab":2,"a":1})"));
  EXPECT_FALSE(u.matches(R"({"日":5})"));
}

// Keywords that are no validation keyword are annotations (JSON Schema 2020-12 6.5), draft-4's id
// among them; validation keywords glass cannot represent are errors naming them.
TEST(JsonSchema, UnknownKeywordsAreAnnotations) {
  const Compiled c = schema(R"({"id":"urn:x","self":{"vendor":"v"},"type":"object","javaType":"com.X",
      "x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string","_format":"x","alias":"b",
      "x-order":1}},"required":["a"]})");
  EXPECT_TRUE(c.matches(R"({"a":"x"})"));
  EXPECT_FALSE(c.matches(R"({"a":1})"));
  for (const char* k : {"not", "if", "contains", "unevaluatedProperties", "$dynamicRef"}) {
    auto r = json_schema_to_gbnf(fmt::format(R"({{"type":"object","{}":{{}}}})", k));
    ASSERT_FALSE(r.ok()) << k;
    EXPECT_NE(r.error().message.find(fmt::format("keyword '{}'", k)), std::string::npos) << r.error().message;
  }
}

// Many enum values are one trie: every value matches, nothing else does (1 beside 10 and 100).
TEST(JsonSchema, LargeEnumsAreExact) {
  std::vector<std::string> values;
  for (int i = 0; i < 300; ++i) values.push_back(std::to_string(i));
  values.push_back(R"("a")");
  values.push_back(R"("ab")");
  values.push_back(R"("日本")");
  values.push_back("null");
  const Compiled e = schema(fmt::format(R"({{"enum":[{}]}})", fmt::join(values, ",")));
  for (const std::string& v : values) EXPECT_TRUE(e.matches(v)) << v;
  for (const char* v : {"300", "01", "1000", "-1", R"("b")", R"("abc")", R"("日")", "nul", "1.0"})
    EXPECT_FALSE(e.matches(v)) << v;
}

// A member's dependencies: objects without it, or with it and what it depends on (exact).
TEST(JsonSchema, DependenciesAreExact) {
  const std::string props =
      R"("properties":{"card":{"type":"string"},"billing":{"type":"string"},"name":{"type":"string"}})";
  for (const std::string dep :
       {R"("dependencies":{"card":["billing"]})", R"("dependentRequired":{"card":["billing"]})",
        R"("dependentSchemas":{"card":{"required":["billing"]}})"}) {
    const Compiled c = schema(fmt::format(R"({{"type":"object",{},{}}})", props, dep));
    EXPECT_FALSE(c.matches(R"({"card":"x"})")) << dep;
    EXPECT_FALSE(c.matches(R"({"card":"x","name":"n"})")) << dep;
    EXPECT_TRUE(c.matches(R"({"card":"x","billing":"y"})")) << dep;
    EXPECT_TRUE(c.matches(R"({"billing":"y"})")) << dep;
    EXPECT_TRUE(c.matches(R"({"name":"n"})")) << dep;
    EXPECT_TRUE(c.matches("{}")) << dep;
  }
  const Compiled req = schema(fmt::format(R"({{"type":"object",{},"required":["card"],
      "dependencies":{{"card":["name"]}}}})",
                                          props));
  EXPECT_FALSE(req.matches(R"({"card":"x"})"));
  EXPECT_TRUE(req.matches(R"({"card":"x","name":"n"})"));
  auto many = json_schema_to_gbnf(
      R"({"type":"object","properties":{"a":{},"b":{},"c":{},"d":{},"e":{}},
          "dependencies":{"a":["b"],"b":["c"],"c":["d"],"d":["e"],"e":["a"]}})");
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.error().message.find("keyword 'dependencies'"), std::string::npos) << many.error().message;
}

// A required name no property declares is written with additionalProperties' schema, or a matching
// pattern's (additionalProperties does not apply to a name a pattern matches).
TEST(JsonSchema, RequiredUndeclaredNamesFollowAdditionalOrPatternSchemas) {
  const Compiled addl = schema(
      R"({"type":"object","properties":{},"additionalProperties":{"type":"integer"},"required":["a"]})");
  EXPECT_TRUE(addl.matches(R"({"a":1})"));
  EXPECT_FALSE(addl.matches(R"({"a":"x"})"));
  const Compiled pat =
      schema(R"({"type":"object","properties":{"z":{}},"patternProperties":{"^a":{"type":"string"}},
      "additionalProperties":{"type":"integer"},"required":["ab"]})");
  EXPECT_TRUE(pat.matches(R"({"ab":"x"})"));
  EXPECT_FALSE(pat.matches(R"({"ab":1})"));
}

TEST(JsonSchema, MemberCounts) {
  const Compiled one = schema(R"({"type":"object","minProperties":1})");
  EXPECT_FALSE(one.matches("{}"));
  EXPECT_TRUE(one.matches(R"({"a":1})"));
  EXPECT_TRUE(one.matches(R"({"a":1,"b":[]})"));
  const Compiled two =
      schema(R"({"type":"object","maxProperties":2,"additionalProperties":{"type":"integer"}})");
  EXPECT_TRUE(two.matches("{}"));
  EXPECT_TRUE(two.matches(R"({"a":1,"b":2})"));
  EXPECT_FALSE(two.matches(R"({"a":1,"b":2,"c":3})"));
  const Compiled declared =
      schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "minProperties":1,"maxProperties":2})");
  EXPECT_FALSE(declared.matches("{}"));
  EXPECT_TRUE(declared.matches(R"({"b":1})"));
  EXPECT_TRUE(declared.matches(R"({"a":1,"b":1})"));
  const Compiled implied =
      schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "required":["a","b"],"minProperties":2})");
  EXPECT_TRUE(implied.matches(R"({"a":1,"b":1})"));
  for (const char* s : {R"({"type":"object","minProperties":2})",
                        R"({"type":"object","properties":{"a":{},"b":{},"c":{}},"maxProperties":2})",
                        R"({"type":"object","properties":{"a":{}},"minProperties":2})"}) {
    auto r = json_schema_to_gbnf(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.error().message.find("Properties'"), std::string::npos) << r.error().message;
  }
}

TEST(JsonSchema, ArraysTuplesAndCounts) {
  const Compiled a = schema(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})");
  EXPECT_TRUE(a.matches("[1,2]"));
  EXPECT_TRUE(a.matches("[1, 2, 3]"));
  EXPECT_FALSE(a.matches("[1]"));
  EXPECT_FALSE(a.matches("[1,2,3,4]"));
  EXPECT_FALSE(a.matches("[1,\"a\"]"));
  const Compiled t =
      schema(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"null"}],"items":false})");
  EXPECT_TRUE(t.matches("[]"));
  EXPECT_TRUE(t.matches("[\"a\"]"));
  EXPECT_TRUE(t.matches("[\"a\",null]"));
  EXPECT_FALSE(t.matches("[\"a\",null,1]"));
  EXPECT_FALSE(t.matches("[null]"));
  const Compiled u =
      schema(R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minItems":2})");
  EXPECT_TRUE(u.matches("[\"a\",1,2]"));
  EXPECT_FALSE(u.matches("[\"a\"]"));
}

TEST(JsonSchema, StringsLengthsPatternsFormats) {
  const Compiled l = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(l.matches("\"ab\""));
  EXPECT_TRUE(l.matches("\"é日\\n\""));
  EXPECT_FALSE(l.matches("\"a\""));
  EXPECT_FALSE(l.matches("\"abcd\""));
  EXPECT_FALSE(l.matches("\"\\ud800a\""));  // a surrogate escape would count differently
  const Compiled p = schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"})");
  EXPECT_TRUE(p.matches("\"AB-123\""));
  EXPECT_FALSE(p.matches("\"AB-12\""));
  EXPECT_FALSE(p.matches("\"xAB-123\""));
  const Compiled s = schema(R"({"type":"string","pattern":"a\"b"})");  // unanchored: a search
  EXPECT_TRUE(s.matches("\"xxa\\\"byy\""));
  EXPECT_FALSE(s.matches("\"ab\""));
  const Compiled d = schema(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(d.matches("\"2024-01-31\""));
  EXPECT_TRUE(d.matches("\"2024-04-30\""));
  EXPECT_FALSE(d.matches("\"2024-04-31\""));
  EXPECT_FALSE(d.matches("\"2024-02-30\""));
  EXPECT_FALSE(d.matches("\"2024-13-01\""));
  const Compiled u = schema(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(u.matches("\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(u.matches("\"123e4567e89b-12d3-a456-426614174000\""));
  const Compiled t = schema(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(t.matches("\"2024-01-31T23:59:59Z\""));
  EXPECT_TRUE(t.matches("\"2024-01-31T00:00:00.123+05:30\""));
  EXPECT_FALSE(t.matches("\"2024-01-31T24:00:00Z\""));
}

TEST(JsonSchema, IntegerRangesAreExact) {
  const std::pair<int, int> ranges[] = {{0, 9},   {-15, 37},  {5, 123}, {-1000, -999},
                                        {10, 10}, {99, 1001}, {-7, 0}};
  for (const auto& [lo, hi] : ranges) {
    const Compiled c = schema(fmt_range(lo, hi));
    for (int x = -1200; x <= 1200; ++x)
      EXPECT_EQ(c.matches(std::to_string(x)), x >= lo && x <= hi) << lo << ".." << hi << ": " << x;
    EXPECT_FALSE(c.matches("01"));
    EXPECT_FALSE(c.matches("-0"));
  }
  const Compiled ex = schema(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100})");
  EXPECT_FALSE(ex.matches("0"));
  EXPECT_TRUE(ex.matches("1"));
  EXPECT_TRUE(ex.matches("99"));
  EXPECT_FALSE(ex.matches("100"));
  const Compiled open = schema(R"({"type":"integer","minimum":18})");
  EXPECT_FALSE(open.matches("17"));
  EXPECT_TRUE(open.matches("18"));
  EXPECT_TRUE(open.matches("123456789"));
}

TEST(JsonSchema, NumberRangesWithWholeBounds) {
  const Compiled c = schema(R"({"type":"number","minimum":-2,"maximum":3})");
  for (const char* ok : {"0", "-2", "-2.0", "-1.99", "3", "3.000", "2.999", "0.5", "-0.5"})
    EXPECT_TRUE(c.matches(ok)) << ok;
  for (const char* bad : {"-2.01", "3.01", "4", "-3", "1e2", "-2.5"}) EXPECT_FALSE(c.matches(bad)) << bad;
  const Compiled n = schema(R"({"type":"number","minimum":0})");
  EXPECT_TRUE(n.matches("12.5"));
  EXPECT_FALSE(n.matches("-0.1"));
}

TEST(JsonSchema, EnumConstRefsAndCombinators) {
  const Compiled e = schema(R"({"enum":["red","green",3,null,{"a":[1]}]})");
  EXPECT_TRUE(e.matches("\"green\""));
  EXPECT_TRUE(e.matches("{\"a\":[1]}"));
  EXPECT_TRUE(e.matches("null"));
  EXPECT_FALSE(e.matches("\"blue\""));
  const Compiled r = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(r.matches(R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(r.matches(R"({"v":1,"next":{"v":2}})"));
  const Compiled o = schema(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})");
  EXPECT_TRUE(o.matches("\"x\""));
  EXPECT_TRUE(o.matches("7"));
  const Compiled a =
      schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"b":{"type":"string"}},"required":["b"]}]})");
  EXPECT_TRUE(a.matches(R"({"a":1,"b":"x"})"));
  EXPECT_FALSE(a.matches(R"({"a":1})"));
  const Compiled any = schema(R"({"type":"object"})");
  EXPECT_TRUE(any.matches(R"({"x":[1,{"y":null}],"z":"w"})"));
  EXPECT_FALSE(any.matches("[]"));
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPath) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"object","properties":{"age":{"type":"number","multipleOf":0.5}}})",
       "at #/properties/age/multipleOf: keyword 'multipleOf' with a fractional value"},
      {R"({"type":"integer","multipleOf":997})", "#/multipleOf: keyword 'multipleOf' (997)"},
      {R"({"type":"array","items":{"type":"string"},"uniqueItems":true})", "#/uniqueItems"},
      {R"({"type":"object","patternProperties":{"^x":{},"^y":{}}})",
       "#/patternProperties: patternProperties"},
      {R"({"type":"string","format":"idn-hostname"})", "format 'idn-hostname' is not supported"},
      {R"({"type":"string","pattern":"^a+b$","maxLength":4})", "#/pattern: pattern '^a+b$' matches strings"},
      {R"({"type":"string","pattern":"(?=a)b"})", "lookaround"},
      {R"({"type":"string","pattern":"(a)\\1"})", "backreferences"},
      {R"({"type":"string","pattern":"\\bword"})", "word boundary"},
      {R"({"oneOf":[{"type":"string"},{"type":"string","minLength":2}]})",
       "oneOf whose branches may overlap"},
      {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "types do not intersect"},
      {R"({"$ref":"http://example.com/s.json"})", "not local"},
      {R"({"$ref":"#/$defs/missing"})", "names nothing"},
      {R"({"type":"number","minimum":1e20})", "keyword 'minimum'"},
      {R"({"type":"number","exclusiveMaximum":true})", "exclusiveMaximum must be a number"},
      {"false", "matches nothing"},
      {R"({"$ref":"#"})", "at #/$ref: $ref '#' only refers on to itself"},
      {R"({"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$ref":"#/$defs/y"},
        "y":{"$ref":"#/$defs/x"}}})",
       "$ref '#/$defs/x' only refers on to itself (2 references round)"},
      {R"({"type":"object","properties":{"s":{"type":"string","pattern":"^((a{0,1000}){0,1000}){0,1000}$"}}})",
       "at #/properties/s/pattern: pattern '^((a{0,1000}){0,1000}){0,1000}$' is too ambiguous"},
      {"{\"type\":", "not valid JSON"},
  };
  for (const auto& [s, want] : cases) {
    auto r = json_schema_to_gbnf(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << s << ": " << r.error().message;
  }
}

// Hostile schemas (the json_schema fuzz harness's seeds): definitions that each use the next twice
// expand exponentially where a $ref sits beside other keywords or in allOf, so conversion counts its
// steps; text nested past the JSON bound would be copied and dumped recursively. Errors, promptly.
std::string doubling_refs(const char* comb, int levels, bool with_type) {
  std::string defs;
  for (int i = 0; i < levels; ++i) {
    const std::string ref =
        "{\"$ref\":\"#/$defs/a" + std::to_string(i + 1) + "\"" + (with_type ? ",\"type\":\"object\"}" : "}");
    defs += "\"a" + std::to_string(i) + "\":{\"" + comb + "\":[" + ref + "," + ref + "]},";
  }
  defs += "\"a" + std::to_string(levels) + "\":{\"type\":\"object\"}";
  return "{\"$defs\":{" + defs + "},\"allOf\":[{\"$ref\":\"#/$defs/a0\"}],\"type\":\"object\"}";
}

TEST(JsonSchema, ExponentialExpansionAndDeepTextAreErrors) {
  for (const std::string& s : {doubling_refs("anyOf", 40, true), doubling_refs("allOf", 40, false)}) {
    auto r = json_schema_to_gbnf(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_EQ(r.error().code, ErrorCode::Unsupported);
    EXPECT_TRUE(r.error().message.find("expands to more than") != std::string::npos ||
                r.error().message.find("nested too deeply") != std::string::npos)
        << r.error().message;
  }
  // A few levels of the same shape are an ordinary schema.
  auto small = json_schema_to_gbnf(doubling_refs("anyOf", 4, true));
  EXPECT_TRUE(small.ok()) << small.error().message;

  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& s : {"{\"const\": " + deep + "}", "{\"enum\": [" + deep + "]}", deep}) {
    auto r = json_schema_to_gbnf(s);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("nested more than 300 deep"), std::string::npos) << r.error().message;
  }
}

// Wide schemas found by hand through glass serve's response_format (bodies of 1.5-4.4 MB): each took
// 22-54 s, or more than a minute, by a search or pairwise comparison per member: required names
// against the properties, allOf parts merged key by key, rule names tried suffix by suffix, enum
// values compared pairwise, uniqueItems candidates compared past the bound. Each now ends in well
// under a second with the bound it reaches, or converts.
std::string wide_properties(const std::string& prefix, int n, bool required) {
  std::string props, names;
  for (int i = 0; i < n; ++i) {
    props += fmt::format(R"({}"{}{}":{{"type":"integer"}})", i ? "," : "", prefix, i);
    names += fmt::format(R"({}"{}{}")", i ? "," : "", prefix, i);
  }
  return R"({"type":"object","properties":{)" + props + "}" +
         (required ? R"(,"required":[)" + names + "]" : "") + "}";
}

TEST(JsonSchema, WideSchemasEndInTheirBounds) {
  const std::string expands = "expands to more than 50000 sub-schemas";
  const std::string a = wide_properties("a", 60000, true);
  std::string branches;
  for (int i = 0; i < 20000; ++i)
    branches +=
        fmt::format(R"({}{{"type":"object","properties":{{"k{}":{{"const":{}}}}},"required":["k{}"]}})",
                    i ? "," : "", i, i, i);
  std::string values;
  for (int i = 0; i < 300000; ++i) values += fmt::format("{}{}", i ? "," : "", i);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {wide_properties("p", 100000, true), expands},
      {R"({"allOf":[)" + a + "," + a + "]}", expands},
      {R"({"allOf":[)" + wide_properties("a", 60000, false) + "," + wide_properties("b", 60000, false) + "]}",
       expands},
      {R"({"oneOf":[)" + branches + "]}", expands},
      {R"({"type":"array","uniqueItems":true,"items":{"enum":[)" + values + "]}}",
       "uniqueItems over more than 8 distinct item values"},
  };
  for (const auto& [schema, error] : cases) {
    auto r = json_schema_to_gbnf(schema);
    ASSERT_FALSE(r.ok()) << schema.substr(0, 80);
    EXPECT_NE(r.error().message.find(error), std::string::npos) << r.error().message;
  }
  // Distinct constants tell branches apart: found by lookup, and 1 and 1.0 are one value.
  auto distinct = json_schema_to_gbnf(R"({"oneOf":[{"enum":[)" + values + R"(]},{"const":"x"}]})");
  EXPECT_TRUE(distinct.ok() || distinct.error().message.find("elements") != std::string::npos)
      << distinct.error().message;
  auto same = json_schema_to_gbnf(R"({"oneOf":[{"const":1},{"const":1.0}]})");
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.error().message.find("oneOf whose branches may overlap"), std::string::npos)
      << same.error().message;
  auto apart = json_schema_to_gbnf(
      R"({"oneOf":[{"const":1},{"const":1.5},{"const":[1,{"a":2}]},{"const":[1,{"a":3}]}]})");
  EXPECT_TRUE(apart.ok()) << apart.error().message;
}

TEST(Regex, FullMatchSubset) {
  auto expr = regex_to_gbnf("(ab|c)+[x-z]?\\d{2}", RegexMode::Full);
  ASSERT_TRUE(expr.ok()) << expr.error().message;
  auto g = compile_gbnf("root ::= " + *expr);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const Compiled c{std::move(*g)};
  EXPECT_TRUE(c.matches("abc12"));
  EXPECT_TRUE(c.matches("cx00"));
  EXPECT_FALSE(c.matches("x00"));
  EXPECT_FALSE(c.matches("abc1"));
}

}  // namespace
}  // namespace glass::grammar
