#include "grammar/analysis.h"

#include <fmt/format.h>

#include <algorithm>

#include "grammar/automaton.h"

namespace glass::grammar {

namespace {

// The rules some alternative of which holds once every rule it calls does: the least fixpoint, from
// worklists rather than repeated passes over the grammar (a chain of helper rules, x{0,100000}
// lowered to 100000 nested optionals, would need a pass per link, each over every element). With
// `bytes_block`, an alternative holding a byte never holds (nullable); else bytes do (productive).
std::vector<bool> rules_holding(const Grammar& g, bool bytes_block) {
  const size_t n = g.rules.size();
  std::vector<bool> holds(n, false);
  std::vector<uint32_t> rule_of_alt, waiting;   // per alternative: its calls not yet known to hold
  std::vector<std::vector<uint32_t>> users(n);  // rule -> alternatives calling it (once per call)
  std::vector<uint32_t> ready;
  for (uint32_t r = 0; r < n; ++r)
    for (const uint32_t a : g.rules[r].alts) {
      const auto alt = static_cast<uint32_t>(waiting.size());
      uint32_t calls = 0;
      bool blocked = false;
      for (uint32_t i = a; g.elems[i].kind != ElemKind::End && !blocked; ++i) {
        if (g.elems[i].kind == ElemKind::Byte)
          blocked = bytes_block;
        else
          ++calls;
      }
      rule_of_alt.push_back(r);
      waiting.push_back(blocked ? UINT32_MAX : calls);
      if (blocked) continue;
      for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i)
        if (g.elems[i].kind == ElemKind::Rule) users[g.elems[i].value].push_back(alt);
      if (calls == 0 && !holds[r]) {
        holds[r] = true;
        ready.push_back(r);
      }
    }
  while (!ready.empty()) {
    const uint32_t x = ready.back();
    ready.pop_back();
    for (const uint32_t alt : users[x]) {
      if (waiting[alt] == UINT32_MAX || --waiting[alt] != 0) continue;
      const uint32_t r = rule_of_alt[alt];
      if (!holds[r]) {
        holds[r] = true;
        ready.push_back(r);
      }
    }
  }
  return holds;
}

struct Edge {
  uint32_t to;
  bool tail;
};

}  // namespace

std::vector<bool> nullable_rules(const Grammar& g) { return rules_holding(g, /*bytes_block=*/true); }

std::vector<bool> productive_rules(const Grammar& g) { return rules_holding(g, /*bytes_block=*/false); }

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

Status check_matchable(const Grammar& g) {
  if (!productive_rules(g)[g.root])
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("grammar: rule '{}' matches no string (each of its alternatives calls a rule "
                    "that never ends, such as a reference to itself)",
                    g.rules[g.root].name));
  // Where a grammar is too ambiguous for the matcher from its first bytes on (an alternation of
  // 10^5 literals, nested repetitions of what may be empty), it is refused now rather than at the
  // first step of a generation.
  Automaton a(g);
  const int32_t start = a.start_state(g.start);
  for (int b = 0; b < 256 && !a.overflowed(); ++b) static_cast<void>(a.next(start, static_cast<uint8_t>(b)));
  if (a.overflowed())
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("grammar: rule '{}' is too ambiguous from its start (more than {} parse stacks "
                    "at once: an alternation of that many literals, or repetitions of what may "
                    "be empty nested in each other)",
                    g.rules[g.root].name, kMaxStacks));
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

// Propagates sets along "set[from] is part of set[to]" edges until nothing changes, from a worklist:
// a set changes at most 256 times, so the work is bounded by the edges, not by chain lengths.
void propagate(std::vector<ByteSet>& sets, const std::vector<std::vector<uint32_t>>& into) {
  std::vector<uint32_t> work(sets.size());
  std::vector<bool> queued(sets.size(), true);
  for (uint32_t r = 0; r < sets.size(); ++r) work[r] = r;
  while (!work.empty()) {
    const uint32_t x = work.back();
    work.pop_back();
    queued[x] = false;
    for (const uint32_t to : into[x]) {
      bool changed = false;
      unite(sets[to], sets[x], changed);
      if (changed && !queued[to]) {
        queued[to] = true;
        work.push_back(to);
      }
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
  bool unused = false;
  // FIRST: an alternative's bytes up to its first element that cannot be empty; first[x] flows into
  // first[r] for every rule x in that prefix.
  std::vector<std::vector<uint32_t>> into(n);
  for (uint32_t r = 0; r < n; ++r)
    for (const uint32_t a : g.rules[r].alts)
      for (uint32_t i = a; g.elems[i].kind != ElemKind::End; ++i) {
        const Elem& e = g.elems[i];
        if (e.kind == ElemKind::Byte) {
          unite(ff.first[r], g.sets[e.value], unused);
          break;
        }
        into[e.value].push_back(r);
        if (!ff.nullable[e.value]) break;
      }
  propagate(ff.first, into);
  // FOLLOW: what may follow each call is the rest of its alternative's FIRST, and the caller's
  // FOLLOW when the rest can be empty (follow[r] flows into follow[callee]). Each alternative is
  // scanned once from its end, carrying the FIRST of the rest, so a long run of nullable calls
  // (x*{100000}) costs its length, not its square.
  for (auto& v : into) v.clear();
  for (uint32_t r = 0; r < n; ++r)
    for (const uint32_t a : g.rules[r].alts) {
      uint32_t end = a;
      while (g.elems[end].kind != ElemKind::End) ++end;
      ByteSet rest;
      bool rest_nullable = true;
      for (uint32_t i = end; i-- > a;) {
        const Elem& e = g.elems[i];
        if (e.kind == ElemKind::Byte) {
          rest = g.sets[e.value];
          rest_nullable = false;
          continue;
        }
        unite(ff.follow[e.value], rest, unused);
        if (rest_nullable) into[r].push_back(e.value);
        if (ff.nullable[e.value]) {
          unite(rest, ff.first[e.value], unused);
        } else {
          rest = ff.first[e.value];
          rest_nullable = false;
        }
      }
    }
  propagate(ff.follow, into);
  return ff;
}

}  // namespace glass::grammar
