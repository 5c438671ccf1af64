// The JSON Schema converter's core (json_schema_converter.h): the primitive rules, the visit of one
// schema node, anyOf / oneOf, enum / const; $ref resolution and allOf merging (json_schema_refs.cpp),
// strings, numbers, objects, arrays and what combinators need (oneOf disjointness, dependencies) have
// files of their own. Errors carry the JSON
// path of the node at fault.
#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/json_bounded.h"
#include "grammar/bound.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_numbers.h"
#include "grammar/json_schema_strings.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"

namespace glass::grammar {
namespace schema_detail {

// The primitive rules, emitted when used. Whitespace only after { [ , : and at most one line
// break with a bounded indent, so a model cannot stall in whitespace forever.
const std::map<std::string, std::string>& primitives() {
  static const std::map<std::string, std::string> p = {
      {"ws", R"(| " " | "\n" [ ]{0,20})"},
      {"jchar", R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))"},
      // One code point per item (no surrogate escapes), so {m,n} counts what minLength counts.
      {"jcharb",
       R"([^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2})))"},
      {"string", R"("\"" jchar* "\"")"},
      {"integer", R"("-"? ("0" | [1-9] [0-9]{0,15}))"},
      {"number", R"(integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?)"},
      {"boolean", R"("true" | "false")"},
      {"null", R"("null")"},
      {"value", R"(object | array | string | number | boolean | null)"},
      {"object", R"("{" ws ( member ( "," ws member )* )? "}")"},
      {"member", R"(string ":" ws value)"},
      {"array", R"("[" ws ( value ( "," ws value )* )? "]")"},
      // RFC 3339 / ISO 8601 pieces; February 29 only in leap years (divisible by 4, and centuries
      // only when divisible by 400).
      {"date",
       R"([1-9] [0-9]{3} "-" ( ("0" [13578] | "1" [02]) "-" ("0" [1-9] | [12] [0-9] | "3" [01]) | ("0" [469] | "11") "-" ("0" [1-9] | [12] [0-9] | "30") | "02" "-" ("0" [1-9] | "1" [0-9] | "2" [0-8]) ) | leap-year "-02-29")"},
      {"leap-year",
       R"([1-9] [0-9] ("0" [48] | [2468] [048] | [13579] [26]) | ([2468] [048] | [13579] [26]) "00")"},
      {"time",
       R"(([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9] ":" [0-5] [0-9] ("." [0-9]{1,6})? ("Z" | [+-] ([01] [0-9] | "2" [0-3]) ":" [0-5] [0-9]))"},
      {"uuid",
       R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
      // Dotted quads without leading zeros.
      {"ipv4", R"(ipv4-octet "." ipv4-octet "." ipv4-octet "." ipv4-octet)"},
      {"ipv4-octet", R"("25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9] [0-9] | [0-9])"},
      // Eight groups, or "::" with at most seven groups after it or before it (a subset).
      {"ipv6",
       R"(ipv6-h16 (":" ipv6-h16){7} | "::" (ipv6-h16 (":" ipv6-h16){0,6})? | ipv6-h16 (":" ipv6-h16){0,6} "::")"},
      {"ipv6-h16", R"([0-9a-fA-F]{1,4})"},
      // RFC 1123 labels of at most 32 characters, at most five (164 characters in all, within 253);
      // the last label starts with a letter (no all-numeric top-level label).
      {"hostname", R"((host-label "."){0,4} [a-zA-Z] ([a-zA-Z0-9-]{0,30} [a-zA-Z0-9])?)"},
      {"host-label", R"([a-zA-Z0-9] ([a-zA-Z0-9-]{0,30} [a-zA-Z0-9])?)"},
      // RFC 3986 subset: scheme "://" reg-name (unreserved characters) [":" port], then path
      // segments, query and fragment of pchar (unreserved, sub-delims, ':', '@', %HH).
      {"uri", R"(uri-scheme "://" [a-zA-Z0-9._~-]{1,64} (":" [0-9]{1,5})? ("/" uri-pchar*)* uri-tail)"},
      {"uri-scheme", R"([a-zA-Z] [a-zA-Z0-9+.-]{0,15})"},
      {"uri-pchar", R"([a-zA-Z0-9._~!$&'()*+,;=:@-] | "%" [0-9a-fA-F] [0-9a-fA-F])"},
      {"uri-tail", R"(("?" (uri-pchar | [/?])*)? ("#" (uri-pchar | [/?])*)?)"},
      // A URI, or a relative reference: an absolute path ("/" not followed by "/"), or a fragment.
      {"uri-reference", R"(uri | "/" (uri-pchar+ ("/" uri-pchar*)*)? uri-tail | "#" (uri-pchar | [/?])*)"},
      {"email",
       R"([a-zA-Z0-9_+-]{1,32} ("." [a-zA-Z0-9_+-]{1,32}){0,3} "@" [a-zA-Z0-9] [a-zA-Z0-9-]{0,30} ("." [a-zA-Z]{2,10}){1,3})"},
  };
  return p;
}

const std::map<std::string, std::vector<std::string>>& primitive_deps() {
  static const std::map<std::string, std::vector<std::string>> d = {
      {"string", {"jchar"}},
      {"number", {"integer"}},
      {"value", {"object", "array", "string", "number", "boolean", "null"}},
      {"object", {"ws", "member"}},
      {"member", {"string", "ws", "value"}},
      {"array", {"ws", "value"}},
      {"date", {"leap-year"}},
      {"ipv4", {"ipv4-octet"}},
      {"ipv6", {"ipv6-h16"}},
      {"hostname", {"host-label"}},
      {"uri", {"uri-scheme", "uri-pchar", "uri-tail"}},
      {"uri-tail", {"uri-pchar"}},
      {"uri-reference", {"uri", "uri-pchar", "uri-tail"}},
  };
  return d;
}

const std::set<std::string>& annotations() {
  static const std::set<std::string> a = {"title",
                                          "description",
                                          "examples",
                                          "default",
                                          "$schema",
                                          "$id",
                                          "id",
                                          "$comment",
                                          "deprecated",
                                          "readOnly",
                                          "writeOnly",
                                          "$defs",
                                          "definitions",
                                          "$anchor",
                                          "contentMediaType",
                                          "contentEncoding",
                                          "contentSchema",
                                          "$vocabulary",
                                          "$dynamicAnchor",
                                          "$recursiveAnchor"};
  return a;
}

// JSON Schema's validation and applicator keywords (drafts 4 to 2020-12) that glass does not
// represent: a schema using one is refused, naming it, since its outputs could break it.
const std::set<std::string>& unsupported_assertions() {
  static const std::set<std::string> u = {"not",
                                          "if",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "unevaluatedItems",
                                          "unevaluatedProperties",
                                          "$dynamicRef",
                                          "$recursiveRef"};
  return u;
}

bool ignored_keyword(const std::string& k) {
  // Unknown keywords are annotations (JSON Schema 2020-12, section 6.5): x-..., javaType, alias, ...
  // `then` and `else` do nothing without `if`, which is refused.
  return annotations().count(k) > 0 || (!supported().count(k) && !unsupported_assertions().count(k));
}

const std::set<std::string>& supported() {
  static const std::set<std::string> s = {"type",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "multipleOf",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "patternProperties",
                                          "propertyNames",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "uniqueItems",
                                          "additionalItems",
                                          "minProperties",
                                          "maxProperties",
                                          "dependencies",
                                          "dependentRequired",
                                          "dependentSchemas"};
  return s;
}

std::string type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number()) return v.get<double>() == std::floor(v.get<double>()) ? "integer" : "number";
  if (v.is_string()) return "string";
  if (v.is_array()) return "array";
  return "object";
}

std::set<std::string> declared_types(const json& s) {
  std::set<std::string> types;
  if (!s.contains("type")) return types;
  if (s["type"].is_string()) types.insert(s["type"].get<std::string>());
  if (s["type"].is_array())
    for (const auto& t : s["type"])
      if (t.is_string()) types.insert(t.get<std::string>());
  return types;
}

// JSON nesting of a schema's text: two levels per schema level through properties.
constexpr size_t kMaxSchemaJsonDepth = 300;
Result<std::string> Converter::run() {
  auto r = visit(root_, "#");
  if (!r) return r.error();
  std::string out = "root ::= " + *r + "\n";
  for (const auto& name : order_) out += name + " ::= " + rules_[name] + "\n";
  for (const auto& name : prims_) out += name + " ::= " + primitives().at(name) + "\n";
  return out;
}

Error Converter::fail(const std::string& path, const std::string& what) const {
  return make_error(ErrorCode::Unsupported, fmt::format("json schema: at {}: {}", path, what));
}

Error Converter::fail_empty(const std::string& path, const std::string& what) const {
  return make_error(ErrorCode::InvalidArgument, fmt::format("json schema: at {}: {}", path, what));
}

std::string Converter::use(const std::string& prim) {
  if (prims_.insert(prim).second)
    if (auto it = primitive_deps().find(prim); it != primitive_deps().end())
      for (const auto& d : it->second) use(d);
  return prim;
}

std::string Converter::rule(const std::string& hint, const std::string& body) {
  if (auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  std::string base;
  for (const char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  if (base.empty() || !std::isalpha(static_cast<unsigned char>(base[0]))) base = "r" + base;
  if (base.size() > 40) base.resize(40);
  std::string name = base;
  int& i = next_suffix_.try_emplace(base, 2).first->second;
  while (rules_.count(name) || primitives().count(name) || name == "root")
    name = fmt::format("{}-{}", base, i++);
  rules_[name] = body;
  order_.push_back(name);
  by_body_[body] = name;
  return name;
}

std::string Converter::alt(const std::vector<std::string>& xs) {
  if (xs.size() == 1) return xs[0];
  std::string out = "(";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? " | " : "") + xs[i];
  return out + ")";
}

Result<std::string> Converter::visit(const json& s0, const std::string& path, int depth) {
  if (depth > 128) return fail(path, "schema nested more than 128 levels deep");
  if (Status st = step(path); !st) return st.error();
  if (s0.is_boolean()) {
    if (s0.get<bool>()) return use("value");
    return fail_empty(path, "the schema false matches nothing");
  }
  if (!s0.is_object()) return fail(path, "a schema must be an object or a boolean");
  // A lone $ref (with annotations) becomes a rule of its own, so recursive schemas terminate.
  if (s0.contains("$ref") && !s0.contains("allOf") && !has_assertions(s0, "$ref")) {
    if (!s0["$ref"].is_string()) return fail(path, "$ref must be a string");
    const std::string ref = s0["$ref"].get<std::string>();
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    // References that only refer on ("$ref": "#" at the root, a -> b -> a) never reach a value.
    std::set<std::string> chain = {ref};
    for (std::string at = ref;;) {
      auto t = resolve(at, path);
      if (!t || !t->is_object() || !t->contains("$ref") || !(*t)["$ref"].is_string() ||
          t->contains("allOf") || has_assertions(*t, "$ref"))
        break;
      at = (*t)["$ref"].get<std::string>();
      if (!chain.insert(at).second)
        return fail(path + "/$ref",
                    fmt::format("$ref '{}' only refers on to itself ({} reference{} round) and "
                                "never reaches a schema",
                                ref, chain.size(), chain.size() == 1 ? "" : "s"));
    }
    auto target = resolve(ref, path);
    if (!target) return target.error();
    std::string hint = ref.substr(ref.find_last_of('/') + 1);
    std::string name;
    for (const char c : hint) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) name = "ref-" + name;
    if (name.size() > 40) name.resize(40);
    const std::string base = name;
    for (int i = 2; rules_.count(name) || primitives().count(name) || name == "root"; ++i)
      name = fmt::format("{}-{}", base, i);
    ref_rules_[ref] = name;
    rules_[name] = "";  // reserved: the body comes after the target is visited
    order_.push_back(name);
    auto body = visit(*target, ref, depth + 1);
    if (!body) return body.error();
    rules_[name] = *body;
    return name;
  }
  auto flat = flatten(s0, path);
  if (!flat) return flat.error();
  const json& s = *flat;
  if (!s.is_object()) return visit(s, path, depth + 1);
  if (s.contains("dependencies") || s.contains("dependentRequired") || s.contains("dependentSchemas")) {
    auto variants = dependency_variants(s, path);
    if (!variants) return variants.error();
    return visit(*variants, path, depth + 1);
  }
  for (const auto& [k, v] : s.items())
    if (!ignored_keyword(k) && !supported().count(k))
      return fail(path, fmt::format("keyword '{}' is not supported", k));

  for (const char* comb : {"anyOf", "oneOf"}) {
    if (!s.contains(comb)) continue;
    if (s.contains(comb == std::string("anyOf") ? "oneOf" : "anyOf"))
      return fail(path, "anyOf together with oneOf is not supported");
    const json& branches = s[comb];
    if (!branches.is_array() || branches.empty())
      return fail(path, fmt::format("{} must be a non-empty array", comb));
    json siblings = s;
    siblings.erase(comb);
    std::vector<std::string> alts;
    std::vector<json> flats;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string bpath = fmt::format("{}/{}/{}", path, comb, i);
      json b = branches[i];
      if (b.is_boolean()) {
        if (!b.get<bool>()) continue;
        b = json::object();
      }
      json both = json::object();
      if (has_assertions(siblings, "")) {
        both["allOf"] = json::array({siblings, b});
      } else {
        both = b;
      }
      auto f = flatten(both, bpath);
      if (!f && matches_nothing(f.error())) continue;  // no value is valid there: never chosen
      if (!f) return f.error();
      auto e = visit(*f, bpath, depth + 1);
      if (!e && matches_nothing(e.error())) continue;
      if (!e) return e.error();
      flats.push_back(*f);
      alts.push_back(*e);
    }
    if (alts.empty()) return fail_empty(path, fmt::format("no {} branch matches any value", comb));
    if (comb == std::string("oneOf"))
      if (auto st = check_disjoint(flats, path); !st) return st.error();
    return alt(alts);
  }

  if (s.contains("const")) return literal_values({s["const"]}, s, path);
  if (s.contains("enum")) {
    if (!s["enum"].is_array() || s["enum"].empty()) return fail(path, "enum must be a non-empty array");
    return literal_values(std::vector<json>(s["enum"].begin(), s["enum"].end()), s, path);
  }

  std::vector<std::string> types;
  if (s.contains("type")) {
    const json& t = s["type"];
    if (t.is_string())
      types.push_back(t.get<std::string>());
    else if (t.is_array())
      for (const auto& e : t) {
        if (!e.is_string()) return fail(path, "type must be a string or an array of strings");
        types.push_back(e.get<std::string>());
      }
    else
      return fail(path, "type must be a string or an array of strings");
  } else {
    // No type: every type is valid; generate those the keywords describe (or any value).
    auto any_of = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks)
        if (s.contains(k)) return true;
      return false;
    };
    if (any_of({"properties", "required", "additionalProperties", "patternProperties", "propertyNames"}))
      types.push_back("object");
    if (any_of({"items", "prefixItems", "minItems", "maxItems", "additionalItems"})) types.push_back("array");
    if (any_of({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
    if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}))
      types.push_back("number");
    if (types.empty()) return use("value");
  }
  std::vector<std::string> alts;
  for (const std::string& t : types) {
    Result<std::string> e = std::string();
    if (t == "string")
      e = string_schema(s, path);
    else if (t == "integer")
      e = number_schema(s, path, true);
    else if (t == "number")
      e = number_schema(s, path, false);
    else if (t == "boolean")
      e = use("boolean");
    else if (t == "null")
      e = use("null");
    else if (t == "object")
      e = object_schema(s, path, depth);
    else if (t == "array")
      e = array_schema(s, path, depth);
    else
      return fail(path, fmt::format("unknown type '{}'", t));
    if (!e) return e.error();
    alts.push_back(*e);
  }
  return alt(alts);
}

Result<std::string> Converter::literal_values(const std::vector<json>& values, const json& s,
                                              const std::string& path) {
  for (const auto& [k, v] : s.items())
    if (k != "enum" && k != "const" && k != "type" && !ignored_keyword(k))
      return fail(path, fmt::format("keyword '{}' next to enum/const is not supported", k));
  std::set<std::string> types = declared_types(s);
  std::vector<std::string> texts;
  for (const json& v : values) {
    const std::string t = type_of(v);
    if (!types.empty() && !types.count(t) && !(t == "integer" && types.count("number"))) continue;
    texts.push_back(v.dump(-1, ' ', false, json::error_handler_t::strict));
  }
  if (texts.empty()) return fail_empty(path, "no enum/const value has the schema's type");
  // A few values stay an alternation; more are one trie, so that the matcher follows one parse
  // stack however many values share a prefix (an enum of 10^5 values was 10^5 stacks).
  constexpr size_t kMaxAlternation = 16;
  if (texts.size() > kMaxAlternation)
    return literal_trie(texts, std::vector<std::string>(texts.size()), 0, texts.size() - 1);
  std::vector<std::string> alts;
  for (const std::string& t : texts) alts.push_back(gbnf_literal(t));
  return alt(alts);
}

}  // namespace schema_detail

using schema_detail::Converter;
using schema_detail::json;
using schema_detail::kMaxSchemaJsonDepth;
using schema_detail::primitives;

Result<std::string> json_schema_to_gbnf(std::string_view schema_json) {
  // Copies, comparisons and dumps of the parsed schema (flatten, merge, const values) recurse with its
  // nesting; the converter's own bound (128 schema levels) is reached first in any real schema.
  // Parsed in linear time (an ordered_json parse searches an object's keys for each key it adds).
  auto root = parse_json_bounded<json>(schema_json, "json schema",
                                       {.memory_factor = 16, .max_depth = kMaxSchemaJsonDepth});
  if (!root) return make_error(ErrorCode::InvalidArgument, root.error().message);
  try {
    return Converter(*root).run();
  } catch (const std::exception& e) {
    return make_error(ErrorCode::InvalidArgument, fmt::format("json schema: {}", e.what()));
  }
}

std::string json_object_gbnf() {
  std::string out = "root ::= object\n";
  for (const char* p : {"object", "member", "value", "array", "string", "jchar", "number", "integer",
                        "boolean", "null", "ws"})
    out += std::string(p) + " ::= " + primitives().at(p) + "\n";
  return out;
}

void warm_json_tables(const std::shared_ptr<const TokenIndex>& vocab) {
  // The same rule texts the converter writes, in a grammar that reaches each in its usual places;
  // tables are cached by content, so schema grammars find them.
  std::string text = "root ::= object | \"[\" ws ( strlen \",\" ws number \",\" ws integer ) \"]\"\n";
  text += "strlen ::= \"\\\"\" jcharb{0,26} \"\\\"\"\n";
  for (const char* p : {"object", "member", "value", "array", "string", "jchar", "jcharb", "number",
                        "integer", "boolean", "null", "ws"})
    text += std::string(p) + " ::= " + primitives().at(p) + "\n";
  auto g = compile_gbnf(text);
  if (!g) return;  // cannot happen: the primitives are fixed text (the tests compile them)
  auto bound = std::make_shared<BoundGrammar>(std::make_shared<const Grammar>(std::move(*g)), vocab);
  std::vector<uint64_t> mask(vocab->mask_words());
  const std::string texts[] = {
      "{\"ab\\n\": \"x\\u00e9y\", \"k\":[1, -2.5e+3, true, false, null, {}, [\"s\"]],\n \"z\": 0}",
      "[\"" + std::string(26, 'a') + "\", -12.5e-3, 42]",
  };
  for (const std::string& t : texts) {
    Matcher m(bound);
    for (const char c : t) {
      if (!m.fill_mask(mask).ok() || !m.accept_bytes(std::string_view(&c, 1))) break;
    }
    (void)m.fill_mask(mask);
  }
}

}  // namespace glass::grammar
