// The JSON Schema converter's references and merges (json_schema_converter.h): $ref resolution,
// the step budget every visit and merge counts against, allOf flattening and the merge of two
// object schemas, and canonical values (equal values written alike) for enum / const comparison.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <unordered_map>

#include "grammar/json_schema_converter.h"

namespace glass::grammar::schema_detail {

// The most visits and merges one conversion may take (Converter::step): one per schema node and
// allOf part for a schema without shared references, so real schemas stay far below it (every schema
// of tests/grammar/schema_corpus.jsonl converts within it, corpus_test.cpp).
constexpr size_t kMaxSteps = 50000;

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

}  // namespace glass::grammar::schema_detail
