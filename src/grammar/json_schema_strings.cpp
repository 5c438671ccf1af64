#include "grammar/json_schema_strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "grammar/analysis.h"
#include "grammar/automaton.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex.h"

namespace glass::grammar {
namespace {

// Where the walk is inside one JSON string character (the bytes as JSON encodes them).
enum J : uint8_t {
  kBoundary,  // between characters
  kEsc,       // after '\'
  kU0,        // after "\u"
  kU1,        // one hex digit read
  kU1d,       // one hex digit read, a 'd' (a surrogate may follow)
  kU2,
  kU2high,  // "\uD8".."\uDB": a high surrogate
  kU3,
  kU3high,
  kCont1,  // UTF-8 continuation bytes still to come
  kCont2,
  kCont3,
};

struct Step {
  J next;
  bool ends;  // a character ends with this byte
  bool high;  // ... and it was a high surrogate escape
};

Step step(J j, uint8_t c) {
  switch (j) {
    case kBoundary:
      if (c == '\\') return {kEsc, false, false};
      if (c < 0x80) return {kBoundary, true, false};
      if ((c & 0xE0) == 0xC0) return {kCont1, false, false};
      if ((c & 0xF0) == 0xE0) return {kCont2, false, false};
      return {kCont3, false, false};
    case kEsc:
      return c == 'u' ? Step{kU0, false, false} : Step{kBoundary, true, false};
    case kU0:
      return {c == 'd' || c == 'D' ? kU1d : kU1, false, false};
    case kU1:
      return {kU2, false, false};
    case kU1d:
      return {(c >= '8' && c <= '9') || c == 'a' || c == 'b' || c == 'A' || c == 'B' ? kU2high : kU2, false,
              false};
    case kU2:
      return {kU3, false, false};
    case kU2high:
      return {kU3high, false, false};
    case kU3:
      return {kBoundary, true, false};
    case kU3high:
      return {kBoundary, true, true};
    case kCont1:
      return {kBoundary, true, false};
    case kCont2:
      return {kCont1, false, false};
    case kCont3:
      return {kCont2, false, false};
  }
  return {kBoundary, true, false};
}

constexpr size_t kMaxWalk = 4096;  // product states (automaton state x position in a character)

std::string escape_for_error(const std::string& s) { return s.size() > 60 ? s.substr(0, 60) + "..." : s; }

}  // namespace

Result<std::vector<bool>> gbnf_accepts(const std::string& gbnf, const std::vector<std::string>& texts) {
  auto g = compile_gbnf(gbnf);
  if (!g) return g.error();
  Automaton a(*g);
  const int32_t start = a.start_state(g->start);
  std::vector<bool> out;
  for (const std::string& text : texts) {
    int32_t st = start;
    for (const char c : text) {
      st = a.next(st, static_cast<uint8_t>(c));
      if (st == Automaton::kDead) break;
    }
    out.push_back(st != Automaton::kDead && a.can_end(st));
  }
  if (a.overflowed())
    return make_error(ErrorCode::Unsupported, "the grammar is too ambiguous to test a name");
  return out;
}

Result<LengthRange> pattern_length_range(const std::string& content_gbnf, const std::string& jchar_rule) {
  auto g = compile_gbnf("root ::= " + content_gbnf + "\njchar ::= " + jchar_rule + "\n");
  if (!g) return g.error();
  Automaton a(*g);
  struct Edge {
    uint32_t to;
    bool ends, high;
  };
  std::map<std::pair<int32_t, uint8_t>, uint32_t> ids;
  std::vector<std::pair<int32_t, J>> nodes;
  std::vector<std::vector<Edge>> out;
  auto id_of = [&](int32_t s, J j) -> std::optional<uint32_t> {
    auto [it, fresh] = ids.try_emplace({s, static_cast<uint8_t>(j)}, static_cast<uint32_t>(nodes.size()));
    if (fresh) {
      if (nodes.size() >= kMaxWalk) return std::nullopt;
      nodes.push_back({s, j});
      out.emplace_back();
    }
    return it->second;
  };
  const int32_t start = a.start_state(g->start);
  if (start == Automaton::kDead) return make_error(ErrorCode::InvalidArgument, "the pattern matches nothing");
  (void)id_of(start, kBoundary);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto [s, j] = nodes[i];
    for (int b = 0; b < 256; ++b) {
      const int32_t t = a.next(s, static_cast<uint8_t>(b));
      if (t == Automaton::kDead) continue;
      const Step st = step(j, static_cast<uint8_t>(b));
      auto to = id_of(t, st.next);
      if (!to)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("the pattern's automaton has more than {} states to walk", kMaxWalk));
      out[i].push_back({*to, st.ends, st.high});
    }
  }
  if (a.overflowed()) return make_error(ErrorCode::Unsupported, "the pattern is too ambiguous to measure");
  const size_t n = nodes.size();
  std::vector<bool> accept(n), live(n);
  for (size_t i = 0; i < n; ++i) accept[i] = nodes[i].second == kBoundary && a.can_end(nodes[i].first);
  // Co-reachable: can still reach an accepting node.
  std::vector<std::vector<uint32_t>> in(n);
  for (size_t i = 0; i < n; ++i)
    for (const Edge& e : out[i]) in[e.to].push_back(static_cast<uint32_t>(i));
  std::vector<uint32_t> work;
  for (size_t i = 0; i < n; ++i)
    if (accept[i]) {
      live[i] = true;
      work.push_back(static_cast<uint32_t>(i));
    }
  while (!work.empty()) {
    const uint32_t v = work.back();
    work.pop_back();
    for (const uint32_t u : in[v])
      if (!live[u]) {
        live[u] = true;
        work.push_back(u);
      }
  }
  if (!live[0]) return make_error(ErrorCode::InvalidArgument, "the pattern matches nothing");
  // Shortest (a high surrogate counts 0): 0-1 BFS over live nodes.
  LengthRange r;
  {
    std::vector<uint64_t> dist(n, UINT64_MAX);
    dist[0] = 0;
    // Dijkstra with weights 0/1 through a simple bucketed frontier.
    std::vector<std::vector<uint32_t>> buckets(1, std::vector<uint32_t>{0});
    for (size_t d = 0; d < buckets.size(); ++d) {
      for (size_t k = 0; k < buckets[d].size(); ++k) {
        const uint32_t v = buckets[d][k];
        if (dist[v] != d) continue;
        for (const Edge& e : out[v]) {
          if (!live[e.to]) continue;
          const uint64_t w = e.ends && !e.high ? 1 : 0;
          if (dist[e.to] <= d + w) continue;
          dist[e.to] = d + w;
          if (buckets.size() <= d + w) buckets.resize(d + w + 1);
          buckets[d + w].push_back(e.to);
        }
      }
    }
    uint64_t best = UINT64_MAX;
    for (size_t i = 0; i < n; ++i)
      if (accept[i]) best = std::min(best, dist[i]);
    r.min = best;
  }
  // Longest (every character counts 1): infinite on a cycle among live nodes, else a DAG walk
  // (iterative depth-first, children before parents).
  std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::vector<uint64_t> longest(n, 0);
  bool cycle = false;
  std::vector<std::pair<uint32_t, size_t>> path = {{0, 0}};
  color[0] = 1;
  while (!path.empty() && !cycle) {
    auto& [v, next] = path.back();
    if (next < out[v].size()) {
      const Edge& e = out[v][next++];
      if (!live[e.to]) continue;
      if (color[e.to] == 1) {
        cycle = true;
      } else if (color[e.to] == 0) {
        color[e.to] = 1;
        path.push_back({e.to, 0});
      }
      continue;
    }
    uint64_t best = 0;
    for (const Edge& e : out[v])
      if (live[e.to]) best = std::max(best, longest[e.to] + (e.ends ? 1 : 0));
    longest[v] = best;
    color[v] = 2;
    path.pop_back();
  }
  if (!cycle) r.max = longest[0];
  return r;
}

Result<std::string> pattern_with_length(const std::string& pattern, uint64_t min_len,
                                        std::optional<uint64_t> max_len, const std::string& jchar_rule) {
  auto re = regex_to_gbnf(pattern, RegexMode::JsonSearch);
  if (!re) return re.error();
  auto range = pattern_length_range(*re, jchar_rule);
  if (!range) return range.error();
  const bool min_ok = range->min >= min_len;
  const bool max_ok = !max_len || (range->max && *range->max <= *max_len);
  if (min_ok && max_ok) return *re;  // the bounds hold for every match already
  // One repeated single-character atom: [class], an escape (\d, \w, \., ...), '.' or a plain
  // character, then a quantifier, optionally anchored at both ends.
  std::string p = pattern;
  const bool a0 = !p.empty() && p.front() == '^';
  if (a0) p.erase(0, 1);
  const bool a1 = !p.empty() && p.back() == '$' && (p.size() < 2 || p[p.size() - 2] != '\\');
  if (a1) p.pop_back();
  size_t i = 0;
  std::string atom;
  if (i < p.size() && p[i] == '[') {
    size_t k = i + 1;
    if (k < p.size() && p[k] == '^') ++k;
    if (k < p.size() && p[k] == ']') ++k;
    while (k < p.size() && p[k] != ']') k += p[k] == '\\' ? 2 : 1;
    if (k < p.size()) {
      atom = p.substr(i, k + 1 - i);
      i = k + 1;
    }
  } else if (i + 1 < p.size() && p[i] == '\\' &&
             std::string("dwsDWS.-\\/+*?()[]{}|^$").find(p[i + 1]) != std::string::npos) {
    atom = p.substr(i, 2);
    i += 2;
  } else if (i < p.size() && std::string("()[]{}|*+?\\^$").find(p[i]) == std::string::npos &&
             static_cast<unsigned char>(p[i]) < 0x80) {
    atom = p.substr(i, 1);
    i += 1;
  }
  uint64_t lo = 0;
  std::optional<uint64_t> hi;
  bool quant = false;
  if (!atom.empty() && i == p.size()) {  // the atom once
    quant = true;
    lo = 1;
    hi = 1;
  } else if (!atom.empty() && i < p.size()) {
    const std::string q = p.substr(i);
    quant = true;
    if (q == "*") {
      lo = 0;
    } else if (q == "+") {
      lo = 1;
    } else if (q == "?") {
      hi = 1;
    } else if (q.size() >= 3 && q.front() == '{' && q.back() == '}') {
      const std::string body = q.substr(1, q.size() - 2);
      const size_t comma = body.find(',');
      auto num = [](const std::string& s, uint64_t& v) {
        if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
        v = std::stoull(s);
        return true;
      };
      uint64_t a = 0, b = 0;
      if (comma == std::string::npos) {
        quant = num(body, a);
        lo = a;
        hi = a;
      } else {
        quant = num(body.substr(0, comma), a);
        lo = a;
        if (comma + 1 < body.size()) {
          quant = quant && num(body.substr(comma + 1), b);
          hi = b;
        }
      }
    } else {
      quant = false;
    }
  }
  if (!quant)
    return make_error(
        ErrorCode::Unsupported,
        fmt::format("pattern '{}' matches strings of {} to {} characters, outside minLength {} / "
                    "maxLength {}; pattern with length bounds is supported when the bounds hold "
                    "for every match or the pattern is one repeated character class",
                    escape_for_error(pattern), range->min,
                    range->max ? std::to_string(*range->max) : "unbounded", min_len,
                    max_len ? std::to_string(*max_len) : "none"));
  // A search (an end not anchored) matches a run of k >= lo atoms anywhere, so only a pattern
  // anchored at both ends keeps its upper count.
  if (!(a0 && a1)) hi = std::nullopt;
  const uint64_t nlo = std::max(lo, min_len);
  std::optional<uint64_t> nhi = hi;
  if (max_len) nhi = nhi ? std::min(*nhi, *max_len) : *max_len;
  if (nhi && *nhi < nlo)
    return make_error(ErrorCode::Unsupported,
                      fmt::format("pattern '{}' has no anchored match within minLength/maxLength",
                                  escape_for_error(pattern)));
  const std::string narrowed =
      "^" + atom + (nhi ? fmt::format("{{{},{}}}", nlo, *nhi) : fmt::format("{{{},}}", nlo)) + "$";
  return regex_to_gbnf(narrowed, RegexMode::JsonSearch);
}

}  // namespace glass::grammar

// ---- the converter's strings ----------------------------------------------------------------------

namespace glass::grammar::schema_detail {

namespace {

// The formats JSON Schema defines (2020-12, and drafts 3 to 7's older names). Any other format is an
// annotation of its author's (OpenAPI's "byte", "int64", a project's "topic"): ignored, as the
// specification asks of unknown formats.
bool defined_format(const std::string& f) {
  static const std::set<std::string> defined = {
      "date-time",   "date",          "time",       "duration",     "email",        "idn-email",
      "hostname",    "idn-hostname",  "ipv4",       "ipv6",         "uri",          "uri-reference",
      "iri",         "iri-reference", "uuid",       "uri-template", "json-pointer", "relative-json-pointer",
      "regex",       "host-name",     "ip-address", "color",        "style",        "phone",
      "utc-millisec"};
  return defined.count(f) > 0;
}

}  // namespace

Status Converter::check_pattern(const std::string& expr, const std::string& pattern,
                                const std::string& path) const {
  // The pattern's grammar alone, as the matcher will meet it: nested repetitions of what may be empty
  // are refused here, naming the pattern, rather than for the whole schema's grammar.
  auto g =
      compile_gbnf("root ::= \"\\\"\" " + expr + " \"\\\"\"\njchar ::= " + primitives().at("jchar") + "\n");
  if (!g) return fail(path + "/pattern", g.error().message);
  if (Status st = check_matchable(*g); !st)
    return fail(
        path + "/pattern",
        fmt::format("pattern '{}' is too ambiguous to match (more than {} ways at once: repetitions of "
                    "what may be empty nested in each other)",
                    escape_for_error(pattern), kMaxStacks));
  return {};
}

Result<std::string> Converter::string_schema(const json& s, const std::string& path) {
  const bool has_len = s.contains("minLength") || s.contains("maxLength");
  if (s.contains("format") && !(s["format"].is_string() && !defined_format(s["format"].get<std::string>()))) {
    if (!s["format"].is_string()) return fail(path, "format must be a string");
    const std::string f = s["format"].get<std::string>();
    if (has_len || s.contains("pattern"))
      return fail(path,
                  fmt::format("format '{}' together with minLength/maxLength/pattern is not supported", f));
    if (f == "date" || f == "time" || f == "uuid" || f == "email" || f == "ipv4" || f == "ipv6" ||
        f == "hostname" || f == "uri" || f == "uri-reference")
      return rule("str-" + f, "\"\\\"\" " + use(f) + " \"\\\"\"");
    if (f == "date-time") {
      use("date");
      use("time");
      return rule("str-date-time", "\"\\\"\" date \"T\" time \"\\\"\"");
    }
    return fail(path + "/format", fmt::format("format '{}' is not supported", f));
  }
  auto len_bound = [&](const char* k, uint64_t dflt) -> Result<uint64_t> {
    if (!s.contains(k)) return dflt;
    const json& v = s[k];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      return fail(path + "/" + k, fmt::format("{} must be a non-negative integer", k));
    return v.get<uint64_t>();
  };
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return fail(path, "pattern must be a string");
    const std::string pat = s["pattern"].get<std::string>();
    use("jchar");
    if (has_len) {
      auto mn = len_bound("minLength", 0);
      if (!mn) return mn.error();
      auto mx = len_bound("maxLength", UINT64_MAX);
      if (!mx) return mx.error();
      if (*mx != UINT64_MAX && *mx < *mn) return fail(path, "maxLength below minLength");
      auto re = pattern_with_length(pat, *mn, *mx == UINT64_MAX ? std::nullopt : std::optional<uint64_t>(*mx),
                                    primitives().at("jchar"));
      if (!re) return fail(path + "/pattern", re.error().message);
      if (Status st = check_pattern(*re, pat, path); !st) return st.error();
      return rule("pattern", "\"\\\"\" " + *re + " \"\\\"\"");
    }
    auto re = regex_to_gbnf(pat, RegexMode::JsonSearch);
    if (!re) return fail(path + "/pattern", re.error().message);
    if (Status st = check_pattern(*re, pat, path); !st) return st.error();
    return rule("pattern", "\"\\\"\" " + *re + " \"\\\"\"");
  }
  if (has_len) {
    auto mn = len_bound("minLength", 0);
    if (!mn) return mn.error();
    auto mx = len_bound("maxLength", UINT64_MAX);
    if (!mx) return mx.error();
    if (*mx != UINT64_MAX && *mx < *mn) return fail(path, "maxLength below minLength");
    if (*mn > kMaxRepeat || (*mx != UINT64_MAX && *mx > kMaxRepeat))
      return fail(path, fmt::format("minLength/maxLength over {} is not supported", kMaxRepeat));
    use("jcharb");
    const std::string rep =
        *mx == UINT64_MAX ? fmt::format("{{{},}}", *mn) : fmt::format("{{{},{}}}", *mn, *mx);
    return rule("string-len", "\"\\\"\" jcharb" + rep + " \"\\\"\"");
  }
  return use("string");
}

}  // namespace glass::grammar::schema_detail
