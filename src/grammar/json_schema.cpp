// The JSON Schema converter's core (json_schema_converter.h): the primitive rules, the visit of one
// schema node, $ref / allOf merging, anyOf / oneOf, enum / const; strings, numbers, objects, arrays
// and what combinators need (oneOf disjointness, dependencies) have files of their own. Errors carry the JSON
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

// The most visits and merges one conversion may take (Converter::step): one per schema node and
// allOf part for a schema without shared references, so real schemas stay far below it (every schema
// of tests/grammar/schema_corpus.jsonl converts within it, corpus_test.cpp).
constexpr size_t kMaxSteps = 50000;
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

Result<json> Converter::resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    return fail(path, fmt::format("$ref '{}' is not local (only '#...' references are supported)", ref));
  try {
    const json::json_pointer ptr(ref.substr(1));
    if (!root_.contains(ptr)) return fail(path, fmt::format("$ref '{}' names nothing in the schema", ref));
    return root_.at(ptr);
  } catch (const std::exception&) {
    return fail(path, fmt::format("$ref '{}' is not a JSON pointer", ref));
  }
}

Status Converter::step(const std::string& path) const {
  if (++steps_ <= kMaxSteps) return {};
  return fail(path, fmt::format("the schema expands to more than {} sub-schemas ($ref / allOf / anyOf "
                                "used inside each other)",
                                kMaxSteps));
}

Result<json> Converter::flatten(const json& s, const std::string& path, int depth) const {
  if (depth > 32) return fail(path, "allOf / $ref nested too deeply to merge");
  if (Status st = step(path); !st) return st.error();
  if (!s.is_object()) return s;
  json base = s;
  std::vector<json> parts;
  if (base.contains("allOf")) {
    if (!base["allOf"].is_array() || base["allOf"].empty())
      return fail(path, "allOf must be a non-empty array");
    for (const auto& p : base["allOf"]) parts.push_back(p);
    base.erase("allOf");
  }
  if (base.contains("$ref") && (!parts.empty() || has_assertions(base, "$ref"))) {
    auto t = resolve(base["$ref"].get<std::string>(), path);
    if (!t) return t.error();
    parts.push_back(*t);
    base.erase("$ref");
  }
  for (json p : parts) {
    if (p.is_boolean()) {
      if (!p.get<bool>()) return fail_empty(path, "allOf holds the schema false (matches nothing)");
      continue;
    }
    if (p.contains("$ref")) {
      auto t = resolve(p["$ref"].get<std::string>(), path);
      if (!t) return t.error();
      json rest = p;
      rest.erase("$ref");
      json both = json::object();
      both["allOf"] = json::array({*t, rest});
      p = both;
    }
    auto f = flatten(p, path + "/allOf", depth + 1);
    if (!f) return f.error();
    auto m = merge(base, *f, path);
    if (!m) return m.error();
    base = std::move(*m);
  }
  return base;
}

bool Converter::has_assertions(const json& s, const std::string& except) {
  for (const auto& [k, v] : s.items())
    if (k != except && !ignored_keyword(k)) return true;
  return false;
}

namespace {

// An object's members by name: an ordered_json object searches its members for each lookup, and
// two allOf parts of 60k properties each took 28 s to merge that way.
class MemberIndex {
 public:
  explicit MemberIndex(json& obj) : obj_(&obj) {
    size_t i = 0;
    for (const auto& [k, unused] : obj.items()) at_.emplace(k, i++);
  }
  json* find(const std::string& k) const {
    const auto it = at_.find(k);
    return it == at_.end() ? nullptr : &entries()[it->second].second;
  }
  // Adds a member `k` does not name yet, without the search ordered_json's insertion makes.
  void append(const std::string& k, const json& v) {
    at_.emplace(k, entries().size());
    entries().emplace_back(k, v);
  }

 private:
  json::object_t::Container& entries() const {
    return static_cast<json::object_t::Container&>(obj_->get_ref<json::object_t&>());
  }
  json* obj_;
  std::unordered_map<std::string, size_t> at_;
};

}  // namespace

// A value written so that equal values are written alike: numbers by their value (1 and 1.0 are one
// value to a validator), containers member by member in their order. (Sorting by json's < instead is
// not a strict weak order once integers past 2^53 meet floats.)
void write_canonical(const json& v, std::string& out) {
  if (v.is_number()) {
    const double d = v.get<double>();
    if (v.is_number_integer() || v.is_number_unsigned())
      out += v.dump();
    else if (std::nearbyint(d) == d && std::fabs(d) < 9.2e18)
      out += std::to_string(static_cast<int64_t>(d));
    else
      out += fmt::format("{}", d);
  } else if (v.is_array()) {
    out += '[';
    for (const auto& e : v) {
      write_canonical(e, out);
      out += ',';
    }
    out += ']';
  } else if (v.is_object()) {
    out += '{';
    for (const auto& [k, e] : v.items()) {
      out += json(k).dump();
      out += ':';
      write_canonical(e, out);
      out += ',';
    }
    out += '}';
  } else {
    out += v.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// Whether no two values are equal, looked up rather than compared pairwise: an enum of 300k values.
bool all_distinct(const std::vector<json>& values) {
  std::set<std::string> seen;
  for (const json& v : values) {
    std::string key;
    write_canonical(v, key);
    if (!seen.insert(std::move(key)).second) return false;
  }
  return true;
}

Result<json> Converter::merge(json a, const json& b, const std::string& path) const {
  // additionalProperties: false in one part forbids the other part's extra members (it sees only
  // its own part's properties), so merging would admit invalid objects: refuse instead.
  for (const json* x : {static_cast<const json*>(&a), &b}) {
    const json& y = x == &a ? b : static_cast<const json&>(a);
    if (x->contains("additionalProperties") && (*x)["additionalProperties"] != true &&
        y.contains("properties") && y["properties"].is_object()) {
      std::set<std::string> own;
      if (x->contains("properties") && (*x)["properties"].is_object())
        for (const auto& [k, unused] : (*x)["properties"].items()) own.insert(k);
      for (const auto& [k, unused] : y["properties"].items())
        if (!own.count(k))
          return fail(path, fmt::format("allOf: property '{}' of one part is not allowed by another part's "
                                        "additionalProperties",
                                        k));
    }
  }
  for (const auto& [k, v] : b.items()) {
    if (ignored_keyword(k)) continue;
    if (!a.contains(k)) {
      a[k] = v;
      continue;
    }
    json& x = a[k];
    if (x == v) continue;
    if (k == "properties" && x.is_object() && v.is_object()) {
      MemberIndex have(x);
      for (const auto& [pk, pv] : v.items()) {
        if (json* old = have.find(pk)) {
          if (*old != pv) *old = json{{"allOf", json::array({*old, pv})}};
        } else {
          have.append(pk, pv);
        }
      }
    } else if (k == "required" && x.is_array() && v.is_array()) {
      std::set<json> have(x.begin(), x.end());
      for (const auto& r : v)
        if (have.insert(r).second) x.push_back(r);
    } else if (k == "type") {
      // integer is the part of number that is whole: their intersection is integer.
      auto set_of = [](const json& t) {
        std::set<std::string> out;
        if (t.is_string()) out.insert(t.get<std::string>());
        if (t.is_array())
          for (const auto& e : t)
            if (e.is_string()) out.insert(e.get<std::string>());
        return out;
      };
      const std::set<std::string> sa = set_of(x), sb = set_of(v);
      std::set<std::string> both;
      for (const auto& t : sa) {
        if (sb.count(t)) both.insert(t);
        if (t == "number" && sb.count("integer")) both.insert("integer");
        if (t == "integer" && sb.count("number")) both.insert("integer");
      }
      if (both.empty()) return fail_empty(path, "allOf: the parts' types do not intersect");
      x = json(std::vector<std::string>(both.begin(), both.end()));
    } else if (k == "enum" && x.is_array() && v.is_array()) {
      // Both enums hold: the values in both (compared canonically, so 1 and 1.0 are one value).
      std::set<std::string> in_v;
      for (const auto& e : v) {
        std::string key;
        write_canonical(e, key);
        in_v.insert(std::move(key));
      }
      json both = json::array();
      for (const auto& e : x) {
        std::string key;
        write_canonical(e, key);
        if (in_v.count(key)) both.push_back(e);
      }
      if (both.empty()) return fail_empty(path, "allOf: the parts' enum values do not intersect");
      x = std::move(both);
    } else if ((k == "minLength" || k == "minItems" || k == "minimum") && x.is_number() && v.is_number()) {
      if (v > x) x = v;
    } else if ((k == "maxLength" || k == "maxItems" || k == "maximum") && x.is_number() && v.is_number()) {
      if (v < x) x = v;
    } else {
      return fail(path, fmt::format("allOf: keyword '{}' differs between the parts and cannot be merged", k));
    }
  }
  return a;
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
