// JSON Schema objects: properties (in order, optional members left out with their commas),
// required, additionalProperties, patternProperties and propertyNames.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "grammar/ir.h"
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
  std::set<size_t> undeclared;  // props added for required names no property declares
  if (s.contains("required")) {
    if (!s["required"].is_array()) return fail(path, "required must be an array");
    // Looked up, not searched: 100k required names took 54 s against as many properties.
    std::set<std::string> declared;
    for (const auto& p : props) declared.insert(p.first);
    for (const auto& r : s["required"]) {
      if (!r.is_string()) return fail(path, "required must hold strings");
      const std::string& name = r.get_ref<const std::string&>();
      required.insert(name);
      // A required name no property declares takes additionalProperties' schema (or a matching
      // pattern's, below).
      if (declared.insert(name).second) {
        undeclared.insert(props.size());
        const json& addl_schema = s.contains("additionalProperties") ? s["additionalProperties"] : json(true);
        props.push_back({name, addl_schema == json(true) ? json::object() : addl_schema});
      }
    }
  }
  // minProperties / maxProperties, kept where the rest implies them (as many required members, no
  // more declared ones than allowed) or where the grammar can count them (one member at least, or
  // free-form members); refused by name elsewhere.
  uint64_t min_props = 0;
  std::optional<uint64_t> max_props;
  for (const char* k : {"minProperties", "maxProperties"}) {
    if (!s.contains(k)) continue;
    const json& v = s[k];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      return fail(path + "/" + k, fmt::format("{} must be a non-negative integer", k));
    if (std::string(k) == "minProperties")
      min_props = v.get<uint64_t>();
    else
      max_props = v.get<uint64_t>();
  }
  if (max_props && *max_props < min_props) return fail(path, "maxProperties below minProperties");
  const auto empty_object = [&]() -> Result<std::string> {
    if (min_props > 0)
      return fail(path + "/minProperties", "no member can be written, so minProperties fails");
    return rule("empty-object", "\"{\" ws \"}\"");
  };
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
    for (size_t i = 0; i < props.size(); ++i) {
      if (!(*hits)[i]) continue;
      // additionalProperties does not apply to a name a pattern matches.
      if (undeclared.erase(i) > 0)
        props[i].second = sub;
      else
        props[i].second = json{{"allOf", json::array({props[i].second, sub})}};
    }
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
      if (names == json(false)) return empty_object();
      auto k = visit(names, path + "/propertyNames", depth + 1);
      if (!k) return k.error();
      key = *k;
    } else if (addl.is_boolean() && !addl.get<bool>()) {
      return empty_object();
    }
    if (value.is_boolean() && !value.get<bool>()) return empty_object();
    auto v =
        visit(value,
              path + (patterns.empty() ? "/additionalProperties" : "/patternProperties/" + patterns[0].first),
              depth + 1);
    if (!v) return v.error();
    use("ws");
    const std::string kv = rule("kv", key + " \":\" ws " + *v);
    if (min_props > 1)
      return fail(path + "/minProperties",
                  "keyword 'minProperties' above 1 is supported only with as many required properties");
    if (max_props && *max_props > grammar::kMaxRepeat)
      return fail(path + "/maxProperties",
                  fmt::format("keyword 'maxProperties' above {} is not supported", grammar::kMaxRepeat));
    if (max_props && *max_props == 0) return empty_object();
    const std::string more = max_props ? fmt::format("( \",\" ws {} ){{0,{}}}", kv, *max_props - 1)
                                       : fmt::format("( \",\" ws {} )*", kv);
    const std::string members = kv + " " + more;
    return rule("object", "\"{\" ws " + (min_props == 1 ? members : "( " + members + " )?") + " \"}\"");
  }
  // Members in order; optional ones may be left out, with commas only between present ones. From
  // member i on, the next member written may be any of i..lim(i), lim(i) being the first required
  // one at or after i. That choice is made by the key: the keys of i..lim(i) as tries (one parse
  // stack for the choice, not one per key: 3,500 optional members were 3,500 stacks at each step),
  // over O(log n) segments of a segment tree, each key's end continuing with its value and then
  // the members after it.
  use("ws");
  // The members' values; an optional member whose schema matches no value is left out (no valid
  // instance holds it), a required one makes the object match nothing.
  std::vector<std::string> values;
  {
    std::vector<std::pair<std::string, json>> kept;
    for (auto& [name, schema] : props) {
      auto e = visit(schema, path + "/properties/" + name, depth + 1);
      if (!e && matches_nothing(e.error()) && !required.count(name)) continue;
      if (!e) return e.error();
      values.push_back(*e);
      kept.emplace_back(std::move(name), std::move(schema));
    }
    props = std::move(kept);
  }
  if (props.empty()) return empty_object();
  const size_t n = props.size();
  if (min_props > std::max<size_t>(required.size(), 1))
    return fail(path + "/minProperties",
                "keyword 'minProperties' above 1 is supported only with as many required properties");
  if (max_props && n > *max_props)
    return fail(path + "/maxProperties",
                "keyword 'maxProperties' below the number of declared properties is not supported");
  std::vector<std::string> keys;  // as written (propertyNames may have left some of `encoded` out)
  for (const auto& [k, v] : props) keys.push_back(json(k).dump());
  std::vector<std::string> after(n);
  std::vector<size_t> lim(n);
  for (size_t i = n; i-- > 0;) lim[i] = required.count(props[i].first) || i + 1 == n ? i : lim[i + 1];
  const auto none_required_from = [&](size_t i) { return !required.count(props[lim[i]].first); };
  std::map<std::pair<size_t, size_t>, std::string> segments;
  // The members lo..hi's tries, as the segments of [0, n) that cover them.
  const std::function<void(size_t, size_t, size_t, size_t, std::vector<std::string>&)> cover =
      [&](size_t seg_lo, size_t seg_hi, size_t lo, size_t hi, std::vector<std::string>& out) {
        if (hi < seg_lo || seg_hi < lo) return;
        if (lo <= seg_lo && seg_hi <= hi) {
          auto [it, added] = segments.try_emplace({seg_lo, seg_hi});
          if (added) it->second = literal_trie(keys, after, seg_lo, seg_hi);
          out.push_back(it->second);
          return;
        }
        const size_t mid = seg_lo + (seg_hi - seg_lo) / 2;
        cover(seg_lo, mid, lo, hi, out);
        cover(mid + 1, seg_hi, lo, hi, out);
      };
  std::string rest_next;  // the members after the one just written, from i + 1 on ("" past the last)
  std::string first;
  for (size_t i = n; i-- > 0;) {
    after[i] = rule("kv", "\":\" ws " + values[i] + (rest_next.empty() ? "" : " " + rest_next));
    std::vector<std::string> choices;
    cover(0, n - 1, i, lim[i], choices);
    const std::string choice = alt(choices);
    const std::string empty = none_required_from(i) ? " | \"\"" : "";
    rest_next = rule("rest", "\",\" ws " + choice + empty);
    // minProperties 1 with no member required: the first member is not optional.
    if (i == 0) first = rule("first", choice + (min_props >= 1 ? "" : empty));
  }
  return rule("object", "\"{\" ws " + (first.empty() ? "" : first + " ") + "\"}\"");
}

std::string Converter::literal_trie(const std::vector<std::string>& keys, const std::vector<std::string>& after,
                                size_t lo, size_t hi) {
  struct Node {
    std::map<std::string, size_t> next;  // by UTF-8 character
    size_t leaf = SIZE_MAX;              // the text that ends here
  };
  std::vector<Node> nodes(1);
  for (size_t j = lo; j <= hi; ++j) {
    size_t at = 0;
    const std::string& k = keys[j];
    for (size_t b = 0; b < k.size();) {
      size_t len = 1;
      const auto c = static_cast<unsigned char>(k[b]);
      if (c >= 0xF0)
        len = 4;
      else if (c >= 0xE0)
        len = 3;
      else if (c >= 0xC0)
        len = 2;
      const std::string ch = k.substr(b, len);
      b += len;
      auto [it, added] = nodes[at].next.try_emplace(ch, nodes.size());
      if (added) nodes.emplace_back();
      at = it->second;
    }
    nodes[at].leaf = j;
  }
  // Bottom-up (children are made after their parents): each node's alternatives, runs of
  // single-child nodes folded into one literal. A text that ends where others go on (an enum's 1 and
  // 10; never a key, which ends with its quote) is one more alternative.
  std::vector<std::string> expr(nodes.size());
  for (size_t v = nodes.size(); v-- > 0;) {
    std::vector<std::string> alts;
    if (nodes[v].leaf != SIZE_MAX) {
      if (nodes[v].next.empty()) {
        expr[v] = after[nodes[v].leaf];
        continue;
      }
      alts.push_back(after[nodes[v].leaf].empty() ? "\"\"" : after[nodes[v].leaf]);
    }
    for (const auto& [ch, child] : nodes[v].next) {
      std::string text = ch;
      size_t c = child;
      while (nodes[c].leaf == SIZE_MAX && nodes[c].next.size() == 1) {
        text += nodes[c].next.begin()->first;
        c = nodes[c].next.begin()->second;
      }
      alts.push_back(gbnf_literal(text) + (expr[c].empty() ? "" : " " + expr[c]));
    }
    expr[v] = alts.size() == 1 ? alts[0] : rule("trie", alt(alts));
  }
  return expr[0].find(' ') == std::string::npos ? expr[0] : rule("trie", expr[0]);
}

}  // namespace glass::grammar::schema_detail
