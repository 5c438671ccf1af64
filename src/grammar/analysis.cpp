#include "grammar/analysis.h"

#include <fmt/format.h>

#include <algorithm>

namespace glass::grammar {

std::vector<bool> nullable_rules(const Grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const uint32_t a : g.rules[r].alts) {
        bool all = true;
        for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i) {
          const Elem& e = g.elems[i];
          if (e.kind == ElemKind::Byte || !nullable[e.value]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

namespace {

struct Edge {
  uint32_t to;
  bool tail;
};

}  // namespace

Status check_grammar(const Grammar& g) {
  const size_t n = g.rules.size();
  const std::vector<bool> nullable = nullable_rules(g);
  // The left-corner graph: R -> S when S can be called before R consumes anything.
  std::vector<std::vector<Edge>> edges(n);
  for (size_t r = 0; r < n; ++r)
    for (const uint32_t a : g.rules[r].alts)
      for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i) {
        const Elem& e = g.elems[i];
        if (e.kind == ElemKind::Byte) break;
        edges[r].push_back({e.value, g.elems[i + 1].kind == ElemKind::End});
        if (!nullable[e.value]) break;
      }
  // Tarjan's strongly connected components, iteratively (grammars may have 10^5 helper rules).
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, size_t>> work;
  int next = 0, n_comp = 0;
  for (uint32_t s = 0; s < n; ++s) {
    if (index[s] >= 0) continue;
    work.push_back({s, 0});
    while (!work.empty()) {
      auto& [v, k] = work.back();
      if (k == 0) {
        index[v] = low[v] = next++;
        stack.push_back(v);
        on_stack[v] = true;
      }
      if (k < edges[v].size()) {
        const uint32_t w = edges[v][k++].to;
        if (index[w] < 0) {
          work.push_back({w, 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        uint32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          comp[w] = n_comp;
        } while (w != v);
        ++n_comp;
      }
      const uint32_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
    }
  }
  for (size_t r = 0; r < n; ++r)
    for (const Edge& e : edges[r])
      if (!e.tail && comp[e.to] == comp[r]) {
        std::string cycle;
        for (size_t q = 0; q < n && cycle.size() < 200; ++q)
          if (comp[q] == comp[r]) cycle += (cycle.empty() ? "'" : ", '") + g.rules[q].name + "'";
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("grammar: rule '{}' is left-recursive (it reaches itself before "
                                      "matching anything, through {})",
                                      g.rules[r].name, cycle));
      }
  return {};
}

}  // namespace glass::grammar

namespace glass::grammar {
namespace {

void unite(ByteSet& a, const ByteSet& b, bool& changed) {
  for (size_t i = 0; i < 4; ++i) {
    const uint64_t x = a.bits[i] | b.bits[i];
    if (x != a.bits[i]) {
      a.bits[i] = x;
      changed = true;
    }
  }
}

}  // namespace

FirstFollow first_follow(const Grammar& g) {
  FirstFollow ff;
  const size_t n = g.rules.size();
  ff.nullable = nullable_rules(g);
  ff.first.assign(n, ByteSet{});
  ff.follow.assign(n, ByteSet{});
  ff.rule_of.assign(g.elems.size(), 0);
  for (uint32_t r = 0; r < n; ++r)
    for (const uint32_t a : g.rules[r].alts)
      for (uint32_t i = a;; ++i) {
        ff.rule_of[i] = r;
        if (g.elems[i].kind == ElemKind::End) break;
      }
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r)
      for (const uint32_t a : g.rules[r].alts)
        for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i) {
          const Elem& e = g.elems[i];
          if (e.kind == ElemKind::Byte) {
            unite(ff.first[r], g.sets[e.value], changed);
            break;
          }
          unite(ff.first[r], ff.first[e.value], changed);
          if (!ff.nullable[e.value]) break;
        }
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t r = 0; r < n; ++r)
      for (const uint32_t a : g.rules[r].alts)
        for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i) {
          const Elem& e = g.elems[i];
          if (e.kind != ElemKind::Rule) continue;
          // What may follow the call: the rest of the alternative, and the caller's follow when
          // the rest can be empty.
          bool rest_nullable = true;
          for (uint32_t j = i + 1; g.elems[j].kind != ElemKind::End; ++j) {
            const Elem& x = g.elems[j];
            if (x.kind == ElemKind::Byte) {
              unite(ff.follow[e.value], g.sets[x.value], changed);
              rest_nullable = false;
              break;
            }
            unite(ff.follow[e.value], ff.first[x.value], changed);
            if (!ff.nullable[x.value]) {
              rest_nullable = false;
              break;
            }
          }
          if (rest_nullable) unite(ff.follow[e.value], ff.follow[r], changed);
        }
  }
  return ff;
}

}  // namespace glass::grammar
