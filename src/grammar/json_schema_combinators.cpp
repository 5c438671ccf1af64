// What the converter's combinators need beyond the visit: whether oneOf branches are apart (every
// output glass writes matches one branch), and dependencies / dependentRequired / dependentSchemas
// turned into an anyOf of objects without them.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_schema_converter.h"

namespace glass::grammar::schema_detail {

Result<json> Converter::dependency_variants(const json& s, const std::string& path) const {
  // dependencies (draft 4-7), dependentRequired and dependentSchemas (2019-09): when member `a` is
  // present, the names listed must be too / the schema must hold. Exactly: the object without `a`,
  // or with `a` required and the dependency added, for each such `a` (anyOf of the choices). glass
  // writes only declared and required members, so "without a" is leaving `a` out of properties.
  constexpr size_t kMaxDependencies = 4;
  std::vector<std::pair<std::string, json>> deps;  // name -> array of names, or a schema
  json base = s;
  for (const char* k : {"dependencies", "dependentRequired", "dependentSchemas"}) {
    if (!base.contains(k)) continue;
    if (!base[k].is_object()) return fail(path + "/" + k, fmt::format("{} must be an object", k));
    for (const auto& [name, d] : base[k].items()) {
      if (!d.is_array() && !d.is_object() && !d.is_boolean())
        return fail(path + "/" + k + "/" + name, "a dependency must be an array of names or a schema");
      deps.emplace_back(name, d);
    }
    base.erase(k);
  }
  std::set<std::string> required;
  if (base.contains("required") && base["required"].is_array())
    for (const auto& r : base["required"])
      if (r.is_string()) required.insert(r.get<std::string>());
  // Dependencies of required members always apply; the others double the choices each.
  std::vector<std::pair<std::string, json>> optional;
  json always = json::array();
  for (auto& [name, d] : deps) {
    if (required.count(name))
      always.push_back(d);
    else
      optional.emplace_back(name, d);
  }
  if (optional.size() > kMaxDependencies)
    return fail(path, fmt::format("keyword 'dependencies' on more than {} optional members is not supported",
                                  kMaxDependencies));
  const bool has_props = base.contains("properties") && base["properties"].is_object();
  const auto with = [](json v, const json& d) {
    if (d.is_array()) {
      if (!v.contains("required") || !v["required"].is_array()) v["required"] = json::array();
      for (const auto& n : d) v["required"].push_back(n);
      return v;
    }
    json both = json::object();
    both["allOf"] = json::array({v, d});
    return both;
  };
  // The names a dependency brings in: an array's, or a schema's required and declared ones.
  const auto names_of = [](const json& d) {
    std::set<std::string> out;
    const auto add = [&out](const json& list) {
      if (list.is_array())
        for (const auto& n : list)
          if (n.is_string()) out.insert(n.get<std::string>());
    };
    if (d.is_array()) add(d);
    if (d.is_object()) {
      if (d.contains("required")) add(d["required"]);
      if (d.contains("properties") && d["properties"].is_object())
        for (const auto& [k, unused] : d["properties"].items()) out.insert(k);
    }
    return out;
  };
  json variants = json::array();
  for (size_t mask = 0; mask < (size_t{1} << optional.size()); ++mask) {
    // A choice that leaves a member out while a present one's dependency brings it in is no choice.
    std::set<std::string> absent, brought;
    for (size_t i = 0; i < optional.size(); ++i) {
      if (mask >> i & 1) {
        for (const std::string& n : names_of(optional[i].second)) brought.insert(n);
      } else {
        absent.insert(optional[i].first);
      }
    }
    for (const json& d : always)
      for (const std::string& n : names_of(d)) brought.insert(n);
    if (std::any_of(absent.begin(), absent.end(), [&](const std::string& n) { return brought.count(n) > 0; }))
      continue;
    json v = base;
    bool writable = true;
    for (size_t i = 0; i < optional.size(); ++i) {
      const auto& [name, d] = optional[i];
      if (mask >> i & 1) {
        if (!v.contains("required") || !v["required"].is_array()) v["required"] = json::array();
        v["required"].push_back(name);
        v = with(std::move(v), d);
      } else if (has_props && v.is_object() && v.contains("properties")) {
        v["properties"].erase(name);
        // Left with no declared member, an object writes any names: `name` among them.
        if (v["properties"].empty() && (!v.contains("required") || v["required"].empty())) writable = false;
      } else if (!v.is_object() || !v.contains("additionalProperties") ||
                 v["additionalProperties"] != json(false) || v.contains("patternProperties")) {
        writable = false;  // free-form members could write `name` without its dependency
      }
    }
    for (const json& d : always) v = with(std::move(v), d);
    if (writable) variants.push_back(std::move(v));
  }
  if (variants.empty())
    return fail(path, "keyword 'dependencies' on an object whose members are not declared is not supported");
  if (variants.size() == 1) return variants[0];
  json out = json::object();
  out["anyOf"] = std::move(variants);
  return out;
}

namespace {

// The JSON types a branch admits ("*": any), integer inside number.
std::set<std::string> branch_types(const json& b, int depth = 0) {
  std::set<std::string> t;
  if (!b.is_object()) {
    t.insert("*");
    return t;
  }
  // Only nested branches (an anyOf / oneOf of its own): the union of theirs.
  if (!b.contains("type") && !b.contains("const") && !b.contains("enum") && depth < 4)
    for (const char* comb : {"anyOf", "oneOf"})
      if (b.contains(comb) && b[comb].is_array() && !b[comb].empty()) {
        for (const json& sub : b[comb])
          for (const std::string& x : branch_types(sub, depth + 1)) t.insert(x);
        return t;
      }
  if (b.contains("const")) {
    t.insert(type_of(b["const"]));
  } else if (b.contains("enum") && b["enum"].is_array()) {
    for (const auto& v : b["enum"]) t.insert(type_of(v));
  } else if (b.contains("type")) {
    if (b["type"].is_string()) t.insert(b["type"].get<std::string>());
    if (b["type"].is_array())
      for (const auto& x : b["type"])
        if (x.is_string()) t.insert(x.get<std::string>());
  } else {
    t.insert("*");
  }
  if (t.count("number")) t.insert("integer");
  return t;
}

// The values a branch is limited to (const / enum), or nullopt.
std::optional<std::vector<json>> branch_values(const json& b) {
  if (!b.is_object()) return std::nullopt;
  if (b.contains("const")) return std::vector<json>{b["const"]};
  if (b.contains("enum") && b["enum"].is_array())
    return std::vector<json>(b["enum"].begin(), b["enum"].end());
  return std::nullopt;
}

// The text every string matching `pattern` starts with: the literal characters after a leading ^ up
// to the first operator (a character a quantifier follows is not certain).
std::string literal_prefix(const std::string& pattern) {
  if (pattern.empty() || pattern[0] != '^') return "";
  std::string out;
  for (size_t i = 1; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (std::string_view("\\.[]()*+?{}|^$").find(c) != std::string_view::npos) {
      if ((c == '*' || c == '+' || c == '?' || c == '{') && !out.empty()) out.pop_back();
      break;
    }
    out += c;
  }
  return out;
}

// Whether no value matches both a and b, judged by what is certain: types apart, values apart, or for
// objects a member one requires and the other forbids or both require with values apart.
bool apart(const json& a, const json& b, int depth) {
  const std::set<std::string> ta = branch_types(a), tb = branch_types(b);
  if (!ta.count("*") && !tb.count("*")) {
    bool common = false;
    for (const auto& t : ta) common = common || tb.count(t) > 0;
    if (!common) return true;
  }
  const auto va = branch_values(a), vb = branch_values(b);
  if (va && vb) {
    std::vector<json> both = *va;
    both.insert(both.end(), vb->begin(), vb->end());
    if (all_distinct(*va) && all_distinct(*vb) && all_distinct(both)) return true;
  }
  // Strings whose patterns start with different literal text.
  if (ta == std::set<std::string>{"string"} && tb == ta && a.contains("pattern") && b.contains("pattern") &&
      a["pattern"].is_string() && b["pattern"].is_string()) {
    const std::string pa = literal_prefix(a["pattern"].get<std::string>());
    const std::string pb = literal_prefix(b["pattern"].get<std::string>());
    if (!pa.empty() && !pb.empty() && pa.compare(0, pb.size(), pb) != 0 && pb.compare(0, pa.size(), pa) != 0)
      return true;
  }
  const std::set<std::string> only_object = {"object"};
  if (ta != only_object || tb != only_object || depth > 0) return false;
  const auto props = [](const json& x) {
    return x.contains("properties") && x["properties"].is_object() ? &x["properties"] : nullptr;
  };
  const auto forbids = [&](const json& x, const std::string& name) {
    if (!x.contains("additionalProperties") || x["additionalProperties"] != json(false)) return false;
    if (x.contains("patternProperties")) return false;
    const json* p = props(x);
    return p == nullptr || !p->contains(name);
  };
  // What glass writes for an object with properties or required names is only those members (other
  // names are never generated): an output of x cannot match y when y requires a name x never writes.
  const auto required_of = [](const json& x) {
    std::set<std::string> r;
    if (x.contains("required") && x["required"].is_array())
      for (const auto& n : x["required"])
        if (n.is_string()) r.insert(n.get<std::string>());
    return r;
  };
  const auto never_matches = [&](const json& x, const json& y) {
    const json* px = props(x);
    std::set<std::string> writes = required_of(x);
    if (px)
      for (const auto& [k, unused] : px->items()) writes.insert(k);
    if (writes.empty()) return false;  // free-form members: any name may be written
    for (const std::string& r : required_of(y))
      if (!writes.count(r)) return true;
    return false;
  };
  if (never_matches(a, b) && never_matches(b, a)) return true;
  for (const auto& [x, y] : {std::pair<const json*, const json*>{&a, &b}, {&b, &a}}) {
    if (!x->contains("required") || !(*x)["required"].is_array()) continue;
    for (const auto& r : (*x)["required"]) {
      if (!r.is_string()) continue;
      const std::string name = r.get<std::string>();
      if (forbids(*y, name)) return true;
      // Both require it: apart where its two schemas are.
      const json* px = props(*x);
      const json* py = props(*y);
      if (!px || !py || !px->contains(name) || !py->contains(name)) continue;
      if (!y->contains("required") || !(*y)["required"].is_array()) continue;
      bool required_there = false;
      for (const auto& q : (*y)["required"]) required_there = required_there || q == r;
      if (required_there && apart((*px)[name], (*py)[name], depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

Status Converter::check_disjoint(const std::vector<json>& flat_branches, const std::string& path) const {
  if (flat_branches.size() <= 1) return {};
  // Branches that are references are judged by what they reference.
  std::vector<json> branches;
  for (const json& b0 : flat_branches) {
    json b = b0;
    for (int hops = 0; hops < 16 && b.is_object() && b.contains("$ref") && b["$ref"].is_string() &&
                       !has_assertions(b, "$ref");
         ++hops) {
      auto target = resolve(b["$ref"].get<std::string>(), path);
      if (!target) return target.error();
      auto f = flatten(*target, path);
      if (!f) return f.error();
      b = std::move(*f);
    }
    branches.push_back(std::move(b));
  }
  // Distinct JSON types per branch, or distinct constants, or objects told apart by a required
  // property with distinct const values: checked over all branches at once (oneOf of 20k branches).
  bool types_ok = true;
  std::set<std::string> seen;
  for (const auto& b : branches)
    for (const auto& t : branch_types(b)) {
      if (t == "*" || !seen.insert(t).second) types_ok = false;
    }
  if (types_ok) return {};
  bool consts_ok = true;
  std::vector<json> values;
  for (const auto& b : branches) {
    if (auto v = branch_values(b))
      values.insert(values.end(), v->begin(), v->end());
    else
      consts_ok = false;
  }
  if (consts_ok && all_distinct(values)) return {};
  // A discriminator: a property every branch requires with a const, all different. Each branch's
  // required names and properties are looked up, not searched (branches of 60k properties).
  if (branches[0].is_object() && branches[0].contains("properties") &&
      branches[0]["properties"].is_object()) {
    struct Shape {
      std::set<std::string> required;
      std::map<std::string, const json*> properties;
    };
    std::vector<Shape> shapes(branches.size());
    for (size_t i = 0; i < branches.size(); ++i) {
      const json& b = branches[i];
      if (!b.is_object()) continue;
      if (b.contains("required") && b["required"].is_array())
        for (const auto& r : b["required"])
          if (r.is_string()) shapes[i].required.insert(r.get<std::string>());
      if (b.contains("properties") && b["properties"].is_object())
        for (const auto& [k, v] : b["properties"].items()) shapes[i].properties.emplace(k, &v);
    }
    for (const auto& [key, unused] : branches[0]["properties"].items()) {
      std::vector<json> tags;
      for (const Shape& shape : shapes) {
        const auto p = shape.properties.find(key);
        if (!shape.required.count(key) || p == shape.properties.end()) break;
        if (!p->second->is_object() || !p->second->contains("const")) break;
        tags.push_back((*p->second)["const"]);
      }
      if (tags.size() == branches.size() && all_distinct(tags)) return {};
    }
  }
  // Pairwise, for the usual few branches: each pair apart by type, values or object members.
  constexpr size_t kMaxPairwise = 64;
  if (branches.size() <= kMaxPairwise) {
    bool all_apart = true;
    for (size_t i = 0; i < branches.size() && all_apart; ++i)
      for (size_t j = i + 1; j < branches.size() && all_apart; ++j)
        all_apart = apart(branches[i], branches[j], 0);
    if (all_apart) return {};
  }
  return fail(path,
              "oneOf whose branches may overlap is not supported (only branches apart by type, by constants, "
              "or as objects by a member one requires and the other forbids or both require with values "
              "apart); use anyOf if overlap is fine");
}

}  // namespace glass::grammar::schema_detail
