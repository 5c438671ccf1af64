// JSON Schema objects: properties (in order, optional members left out with their commas),
// required, additionalProperties, patternProperties and propertyNames.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "grammar/json_schema_converter.h"
#include "grammar/json_schema_strings.h"
#include "grammar/regex.h"

namespace glass::grammar::schema_detail {

Result<std::string> Converter::grammar_of(const json& sub, const std::string& path) const {
  Converter c(root_);
  c.steps_ = steps_;
  auto r = c.visit(sub, path);
  steps_ = c.steps_;
  if (!r) return r.error();
  std::string out = "root ::= " + *r + "\n";
  for (const auto& name : c.order_) out += name + " ::= " + c.rules_[name] + "\n";
  for (const auto& name : c.prims_) out += name + " ::= " + primitives().at(name) + "\n";
  return out;
}

Result<std::string> Converter::object_schema(const json& s, const std::string& path, int depth) {
  std::vector<std::pair<std::string, json>> props;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return fail(path, "properties must be an object");
    for (const auto& [k, v] : s["properties"].items()) props.push_back({k, v});
  }
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return fail(path, "required must be an array");
    // Looked up, not searched: 100k required names took 54 s against as many properties.
    std::set<std::string> declared;
    for (const auto& p : props) declared.insert(p.first);
    for (const auto& r : s["required"]) {
      if (!r.is_string()) return fail(path, "required must hold strings");
      const std::string& name = r.get_ref<const std::string&>();
      required.insert(name);
      if (declared.insert(name).second) props.push_back({name, json::object()});
    }
  }
  const json addl = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
  // patternProperties: a declared property whose name matches a pattern must satisfy both.
  std::vector<std::pair<std::string, json>> patterns;
  if (s.contains("patternProperties")) {
    if (!s["patternProperties"].is_object()) return fail(path, "patternProperties must be an object");
    for (const auto& [k, v] : s["patternProperties"].items()) patterns.push_back({k, v});
  }
  std::vector<std::string> encoded;  // the names as the object writes them
  for (const auto& [k, v] : props) encoded.push_back(json(k).dump());
  for (const auto& [pat, sub] : patterns) {
    const std::string ppath = path + "/patternProperties/" + pat;
    if (Status st = step(ppath); !st) return st.error();
    auto re = regex_to_gbnf(pat, RegexMode::JsonSearch);
    if (!re) return fail(ppath, re.error().message);
    // A control character is written as an escape, which the pattern's grammar might spell
    // differently: refuse rather than risk deciding that a name does not match.
    for (const auto& [k, v] : props)
      if (std::any_of(k.begin(), k.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; }))
        return fail(ppath, fmt::format("property name {} holds a control character", json(k).dump()));
    auto hits = gbnf_accepts(
        "root ::= \"\\\"\" " + *re + " \"\\\"\"\njchar ::= " + primitives().at("jchar") + "\n", encoded);
    if (!hits) return fail(ppath, hits.error().message);
    for (size_t i = 0; i < props.size(); ++i)
      if ((*hits)[i]) props[i].second = json{{"allOf", json::array({props[i].second, sub})}};
  }
  // propertyNames: a declared name it refuses is left out (an error when required).
  json names = json(true);
  if (s.contains("propertyNames")) {
    names = s["propertyNames"];
    if (!names.is_boolean() && !names.is_object()) return fail(path, "propertyNames must be a schema");
    if (names.is_object()) {
      json both = json::object();
      both["allOf"] = json::array({json{{"type", "string"}}, names});
      names = both;
    }
    if (names != json(true)) {
      // propertyNames false allows no name: only the empty object.
      std::vector<bool> ok(props.size(), false);
      if (names != json(false)) {
        auto g = grammar_of(names, path + "/propertyNames");
        if (!g) return g.error();
        auto hits = gbnf_accepts(*g, encoded);
        if (!hits) return fail(path + "/propertyNames", hits.error().message);
        ok = *hits;
      }
      std::vector<std::pair<std::string, json>> kept;
      for (size_t i = 0; i < props.size(); ++i) {
        if (ok[i]) {
          kept.push_back(props[i]);
        } else if (required.count(props[i].first)) {
          return fail(path + "/propertyNames",
                      fmt::format("required property '{}' is not allowed by propertyNames", props[i].first));
        }
      }
      props = std::move(kept);
    }
  }
  if (props.empty()) {
    use("ws");
    if (s.contains("required") && !required.empty()) return fail(path, "no required property can be written");
    std::string key = use("string");
    json value = addl;
    if (!patterns.empty()) {
      // Members only of the pattern's names, their values of its schema; additionalProperties
      // does not apply to them. Two patterns would have to be matched against each other's names.
      if (patterns.size() > 1)
        return fail(path + "/patternProperties",
                    "patternProperties with more than one pattern on an object without properties is not "
                    "supported");
      if (names != json(true))
        return fail(path + "/patternProperties",
                    "patternProperties together with propertyNames on an object without properties is not "
                    "supported");
      auto re = regex_to_gbnf(patterns[0].first, RegexMode::JsonSearch);
      if (!re) return fail(path + "/patternProperties/" + patterns[0].first, re.error().message);
      use("jchar");
      key = rule("pattern", "\"\\\"\" " + *re + " \"\\\"\"");
      value = patterns[0].second;
    } else if (names != json(true)) {
      if (names == json(false)) return rule("empty-object", "\"{\" ws \"}\"");
      auto k = visit(names, path + "/propertyNames", depth + 1);
      if (!k) return k.error();
      key = *k;
    } else if (addl.is_boolean() && !addl.get<bool>()) {
      return rule("empty-object", "\"{\" ws \"}\"");
    }
    if (value.is_boolean() && !value.get<bool>()) return rule("empty-object", "\"{\" ws \"}\"");
    auto v =
        visit(value,
              path + (patterns.empty() ? "/additionalProperties" : "/patternProperties/" + patterns[0].first),
              depth + 1);
    if (!v) return v.error();
    use("ws");
    const std::string kv = rule("kv", key + " \":\" ws " + *v);
    return rule("object", "\"{\" ws ( " + kv + " ( \",\" ws " + kv + " )* )? \"}\"");
  }
  // Members in order; optional ones may be left out, with commas only between present ones:
  // first_i = the members from i on when none came before, rest_i = the same after one did.
  use("ws");
  std::vector<std::string> kvs;
  for (const auto& [k, v] : props) {
    auto e = visit(v, path + "/properties/" + k, depth + 1);
    if (!e) return e.error();
    kvs.push_back(gbnf_literal(json(k).dump()) + " \":\" ws " + *e);
  }
  const size_t n = props.size();
  std::vector<std::string> rest(n + 1), first(n + 1);
  rest[n] = "";
  first[n] = "";
  for (size_t i = n; i-- > 0;) {
    const bool req = required.count(props[i].first) > 0;
    const std::string r_next = rest[i + 1].empty() ? "" : " " + rest[i + 1];
    const std::string with = "\",\" ws " + kvs[i] + r_next;
    rest[i] = rule("rest", req ? with : with + " | " + (rest[i + 1].empty() ? "\"\"" : rest[i + 1]));
    const std::string fwith = kvs[i] + r_next;
    first[i] = rule("first", req ? fwith : fwith + " | " + (first[i + 1].empty() ? "\"\"" : first[i + 1]));
  }
  return rule("object", "\"{\" ws " + first[0] + " \"}\"");
}

}  // namespace glass::grammar::schema_detail
