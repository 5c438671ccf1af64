// JSON Schema arrays: items / prefixItems (tuples), minItems / maxItems, and uniqueItems over a
// small finite set of item values.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "grammar/json_schema_converter.h"
#include "grammar/regex.h"

namespace glass::grammar::schema_detail {

Result<std::vector<json>> Converter::finite_values(const json& items, const std::string& path) const {
  static constexpr size_t kMaxValues = 8;
  if (!items.is_object()) return std::vector<json>();
  auto f = flatten(items, path);
  if (!f) return f.error();
  const json& s = *f;
  if (!s.is_object()) return std::vector<json>();
  for (const auto& [k, v] : s.items())
    if (k != "enum" && k != "const" && k != "type" && !ignored_keyword(k)) return std::vector<json>();
  std::set<std::string> types = declared_types(s);
  std::vector<json> cands;
  if (s.contains("const")) {
    cands.push_back(s["const"]);
  } else if (s.contains("enum") && s["enum"].is_array()) {
    cands.assign(s["enum"].begin(), s["enum"].end());
  } else if (!types.empty()) {
    for (const auto& t : types) {
      if (t == "boolean") {
        cands.push_back(json(false));
        cands.push_back(json(true));
      } else if (t == "null") {
        cands.push_back(json(nullptr));
      } else {
        return std::vector<json>();
      }
    }
    types.clear();
  } else {
    return std::vector<json>();
  }
  std::vector<json> out;
  for (const json& v : cands) {
    if (v.is_object() || v.is_array()) return std::vector<json>();
    const std::string t = type_of(v);
    if (!types.empty() && !types.count(t) && !(t == "integer" && types.count("number"))) continue;
    // 1 and 1.0 are one value to a validator (true and 1 are not, nor are they to json ==).
    if (std::none_of(out.begin(), out.end(), [&](const json& o) { return o == v; })) out.push_back(v);
    if (out.size() > kMaxValues) break;  // refused below: comparing the rest costs time, not more
  }
  if (out.size() > kMaxValues)
    return fail(
        path, fmt::format("uniqueItems over more than {} distinct item values is not supported", kMaxValues));
  if (out.empty()) return fail_empty(path, "no enum/const value has the schema's type");
  return out;
}

Result<std::string> Converter::unique_array(const std::vector<json>& values, uint64_t mn, uint64_t mx,
                                            const std::string& path) {
  const size_t k = values.size();
  if (mn > k)
    return fail(path + "/uniqueItems", fmt::format("minItems {} exceeds the {} distinct item values", mn, k));
  std::vector<std::string> lits;
  for (const json& v : values)
    lits.push_back(gbnf_literal(v.dump(-1, ' ', false, json::error_handler_t::strict)));
  std::map<uint32_t, std::string> memo;
  std::function<std::string(uint32_t)> state = [&](uint32_t used) -> std::string {
    if (auto it = memo.find(used); it != memo.end()) return it->second;
    const auto n = static_cast<uint64_t>(__builtin_popcount(used));
    std::vector<std::string> alts;
    if (n >= mn) alts.push_back("\"\"");
    if (n < mx)
      for (size_t i = 0; i < k; ++i) {
        if (used & (1u << i)) continue;
        alts.push_back((used ? "\",\" ws " : "") + lits[i] + " " + state(used | (1u << i)));
      }
    const std::string name = rule("uniq", alts.size() == 1 ? alts[0] : alt(alts));
    memo[used] = name;
    return name;
  };
  use("ws");
  return rule("array", "\"[\" ws " + state(0) + " \"]\"");
}

Result<std::string> Converter::array_schema(const json& s, const std::string& path, int depth) {
  std::vector<json> prefix;
  json tail = json(true);
  bool tail_allowed = true;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) return fail(path, "prefixItems must be an array");
    prefix.assign(s["prefixItems"].begin(), s["prefixItems"].end());
    if (s.contains("items")) tail = s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {  // draft 7 tuples
    prefix.assign(s["items"].begin(), s["items"].end());
    if (s.contains("additionalItems")) tail = s["additionalItems"];
  } else if (s.contains("items")) {
    tail = s["items"];
  }
  // additionalItems without an items array constrains nothing (drafts 4 to 2019-09): ignored.
  if (tail.is_boolean() && !tail.get<bool>()) tail_allowed = false;
  const bool unique = s.contains("uniqueItems") && s["uniqueItems"] == true;
  auto count = [&](const char* k, uint64_t dflt) -> Result<uint64_t> {
    if (!s.contains(k)) return dflt;
    const json& v = s[k];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      return fail(path + "/" + k, fmt::format("{} must be a non-negative integer", k));
    return v.get<uint64_t>();
  };
  auto mn = count("minItems", 0);
  if (!mn) return mn.error();
  auto mx = count("maxItems", UINT64_MAX);
  if (!mx) return mx.error();
  if (*mx < *mn) return fail(path, "maxItems below minItems");
  if (*mn > 1000 || (*mx != UINT64_MAX && *mx > 1000))
    return fail(path, "minItems/maxItems over 1000 is not supported");
  // uniqueItems holds trivially for at most one item; over a small finite set of item values
  // (enum / const / boolean / null items) a rule per set of values written keeps them distinct;
  // anything else would need a grammar state per set of items written.
  if (unique && *mx > 1 && prefix.empty() && tail_allowed) {
    auto values = finite_values(tail, path + "/items");
    if (!values) return values.error();
    if (!values->empty()) return unique_array(*values, *mn, *mx, path);
  }
  if (unique && *mx > 1 && !(!tail_allowed && prefix.size() <= 1))
    return fail(path + "/uniqueItems",
                "keyword 'uniqueItems' is supported only with maxItems 0 or 1 (a grammar cannot track which "
                "items were written)");
  const uint64_t P = prefix.size();
  if (!tail_allowed && *mn > P) return fail(path, "minItems exceeds the items allowed");
  use("ws");
  std::vector<std::string> elems;
  for (size_t i = 0; i < prefix.size(); ++i) {
    auto e = visit(prefix[i], fmt::format("{}/prefixItems/{}", path, i), depth + 1);
    if (!e) return e.error();
    elems.push_back(*e);
  }
  std::string t;
  if (tail_allowed) {
    auto e = visit(tail, path + "/items", depth + 1);
    if (!e) return e.error();
    t = *e;
  }
  // seq_i: the elements from index i on (a comma first when i > 0).
  const uint64_t limit = std::min<uint64_t>(P, *mx);
  std::string tail_part;
  auto comma = [](uint64_t i) { return i > 0 ? std::string("\",\" ws ") : std::string(); };
  auto tail_from = [&](uint64_t i) -> std::string {  // i == limit elements done
    if (!tail_allowed || *mx <= i) return "";
    const uint64_t tmin = *mn > i ? *mn - i : 0;
    const std::string more = *mx == UINT64_MAX
                                 ? fmt::format("{{{},}}", tmin > 0 ? tmin - 1 : 0)
                                 : fmt::format("{{{},{}}}", tmin > 0 ? tmin - 1 : 0, *mx - i - 1);
    std::string body;
    if (i == 0) {
      body = t + " ( \",\" ws " + t + " )" + more;
      if (tmin == 0) body = "( " + body + " )?";
    } else {
      const std::string rep =
          *mx == UINT64_MAX ? fmt::format("{{{},}}", tmin) : fmt::format("{{{},{}}}", tmin, *mx - i);
      body = "( \",\" ws " + t + " )" + rep;
    }
    return rule("items", body);
  };
  std::string seq = tail_from(limit);
  for (uint64_t i = limit; i-- > 0;) {
    const std::string with = comma(i) + elems[i] + (seq.empty() ? "" : " " + seq);
    seq = rule("tuple", i >= *mn ? with + " | \"\"" : with);
  }
  return rule("array", "\"[\" ws " + (seq.empty() ? std::string() : seq + " ") + "\"]\"");
}

}  // namespace glass::grammar::schema_detail
