#include "grammar/bound.h"

#include <optional>
#include <string_view>

namespace glass::grammar {

BoundGrammar::BoundGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> vocab)
    : g_(std::move(g)),
      vocab_(std::move(vocab)),
      ff_(first_follow(*g_)),
      min_len_(g_->rules.size(), kWalkDepth + 1),
      local_(std::make_unique<Automaton>(*g_)) {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g_->rules.size(); ++r)
      for (const uint32_t a : g_->rules[r].alts) {
        uint32_t n = 0;
        for (uint32_t i = a; g_->elems[i].kind != ElemKind::End && n <= kWalkDepth; ++i)
          n += g_->elems[i].kind == ElemKind::Byte ? 1 : min_len_[g_->elems[i].value];
        n = std::min<uint32_t>(n, kWalkDepth + 1);
        if (n < min_len_[r]) {
          min_len_[r] = n;
          changed = true;
        }
      }
  }
}

const PositionTable& BoundGrammar::table(const StackKey& key) const {
  std::lock_guard lk(mu_);
  auto& t = tables_[key];
  if (!t) {
    const std::optional<std::string> sig = signature(key);
    if (sig) t = vocab_->cached_table(*sig);
    if (!t) {
      t = build(key);
      if (sig) vocab_->cache_table(*sig, t);
    }
  }
  return *t;
}

size_t BoundGrammar::tables_built() const {
  std::lock_guard lk(mu_);
  return tables_.size();
}

// Everything a table depends on, as text: the frames' remaining elements, every rule reachable from
// them (renumbered in the order found, so equal sub-grammars of different grammars give equal
// text), the byte sets by value, and the follow set of the bottom frame's rule.
std::optional<std::string> BoundGrammar::signature(const StackKey& key) const {
  // Rules are entered only within kWalkDepth bytes of the suffix (the walk never reads further):
  // first the fewest bytes before each reachable rule is called, then the text in a fixed order.
  std::map<uint32_t, uint32_t> dist;                // rule -> fewest bytes read before a call of it
  std::vector<std::pair<uint32_t, uint32_t>> work;  // (element position, bytes read before it)
  auto scan = [&](uint32_t i, uint32_t d) {
    for (; g_->elems[i].kind != ElemKind::End && d <= kWalkDepth && dist.size() <= kMaxSignatureRules; ++i) {
      const Elem& e = g_->elems[i];
      if (e.kind == ElemKind::Byte) {
        ++d;
        continue;
      }
      auto [it, fresh] = dist.try_emplace(e.value, d);
      if (fresh || d < it->second) {
        it->second = d;
        for (const uint32_t a : g_->rules[e.value].alts) work.push_back({a, d});
      }
      d += min_len_[e.value];
    }
  };
  size_t depth = 0;
  for (; depth < kContext + 1 && key[depth] != kNone; ++depth) scan(key[depth], 0);
  while (!work.empty() && dist.size() <= kMaxSignatureRules) {
    const auto [i, d] = work.back();
    work.pop_back();
    scan(i, d);
  }
  // Too much grammar within reach to be worth naming (an object of 3,500 optional members reaches
  // most of them within a few bytes): the table is this grammar's own, built without the search.
  if (dist.size() > kMaxSignatureRules) return std::nullopt;
  std::string out;
  std::map<uint32_t, uint32_t> ids;
  std::vector<uint32_t> todo;
  auto put = [&out](uint32_t x) { out.append(reinterpret_cast<const char*>(&x), sizeof x); };
  // A sequence up to where the walk cannot reach: past elements that take more than kWalkDepth bytes
  // (a flat x{100000} made every position's text 100000 elements long, and walking one byte per
  // position took seconds).
  auto seq = [&](uint32_t i) {
    for (uint32_t read = 0;; ++i) {
      const Elem& e = g_->elems[i];
      if (read > kWalkDepth) {
        out += '\x7f';  // not an element kind: the rest of the sequence does not matter
        break;
      }
      out += static_cast<char>(e.kind);
      if (e.kind == ElemKind::End) break;
      if (e.kind == ElemKind::Byte) {
        out.append(reinterpret_cast<const char*>(g_->sets[e.value].bits.data()), 32);
        ++read;
        continue;
      }
      if (auto d = dist.find(e.value); d == dist.end() || d->second > kWalkDepth) {
        out += 'x';  // a call the walk cannot reach: its rule does not matter
      } else {
        auto [it, fresh] = ids.try_emplace(e.value, static_cast<uint32_t>(ids.size()));
        if (fresh) todo.push_back(e.value);
        put(it->second);
      }
      read += min_len_[e.value];
    }
  };
  for (size_t k = 0; k < depth; ++k) seq(key[k]);
  out += static_cast<char>(depth);
  out += static_cast<char>(key.back());
  for (size_t k = 0; k < todo.size(); ++k) {
    const Rule& r = g_->rules[todo[k]];
    put(static_cast<uint32_t>(r.alts.size()));
    for (const uint32_t a : r.alts) seq(a);
  }
  out.append(reinterpret_cast<const char*>(follow_of(key).bits.data()), 32);
  return out;
}

// What may follow the suffix's bottom frame: its rule's FOLLOW1, widened to the bytes that follow
// any JSON value when it is a subset of those, so that the tables of one JSON rule (a string, a
// number) are the same table in every schema's grammar (deferring a few more tokens is safe;
// rejecting a byte some caller allows would not be, so a wider FOLLOW1 is kept as it is).
const ByteSet& BoundGrammar::follow_of(const StackKey& key) const {
  static const ByteSet kNothing{};
  static const ByteSet kJson = [] {
    ByteSet b;
    for (const char c : std::string_view(",}]: \n\t\r\"")) b.add(static_cast<uint8_t>(c));
    return b;
  }();
  if (key.back() == 1) return kNothing;  // the stack ends there: nothing may follow
  size_t depth = 0;
  while (depth < kContext + 1 && key[depth] != kNone) ++depth;
  const ByteSet& f = ff_.follow[ff_.rule_of[key[depth - 1]]];
  for (size_t i = 0; i < 4; ++i)
    if (f.bits[i] & ~kJson.bits[i]) return f;
  return kJson;
}

std::unique_ptr<PositionTable> BoundGrammar::build(const StackKey& key) const {
  // The local automaton's cache is a cache: keep it from growing without bound across tables.
  if (local_->n_states() > 20000 || local_->n_nodes() > (size_t{1} << 20))
    local_ = std::make_unique<Automaton>(*g_);
  Automaton& a = *local_;
  const TokenIndex& v = *vocab_;
  const auto& trie = v.trie();
  auto out = std::make_unique<PositionTable>();
  std::vector<int32_t> state(static_cast<size_t>(kWalkDepth) + 1);
  std::vector<uint8_t> escaped(state.size());
  // The suffix as a stack: the deepest frame first, over the bottom.
  size_t depth = 0;
  while (depth < kContext + 1 && key[depth] != kNone) ++depth;
  state[0] = a.start_stack(std::span<const uint32_t>(key.data(), depth));
  escaped[0] = 0;
  // Leaving the bottom frame's rule: what its callers may read next.
  const ByteSet& follow = follow_of(key);
  std::vector<uint64_t> bits(v.mask_words(), 0);  // the accepted tokens
  size_t n_accepted = 0;
  for (uint32_t i = 1; i < trie.size();) {
    const TrieNode& n = trie[i];
    const size_t d = n.depth;
    // Some path left p's rule before this byte, and a caller may accept the byte: what follows
    // depends on the stack below.
    const bool esc = escaped[d - 1] || (a.can_end(state[d - 1]) && follow.has(n.byte));
    const int32_t s = a.next(state[d - 1], n.byte);
    if (s == Automaton::kDead) {
      if (esc)
        for (uint32_t r = n.rank; r < n.rank_end; ++r) out->deferred.push_back(r);
      i = n.skip;
      continue;
    }
    for (uint32_t r = n.rank; r < n.here; ++r) {
      const auto id = static_cast<uint32_t>(v.token_at_rank(r));
      bits[id >> 6] |= uint64_t{1} << (id & 63);
    }
    n_accepted += n.here - n.rank;
    if (d == kWalkDepth) {  // longer tokens: the full state decides (bound.h)
      for (uint32_t r = n.here; r < n.rank_end; ++r) out->deferred.push_back(r);
      i = n.skip;
      continue;
    }
    state[d] = s;
    escaped[d] = esc;
    ++i;
  }
  if (a.overflowed()) {
    // Too ambiguous to decide locally: defer every token to the full state's check (which reports
    // the overflow as an error if it recurs there).
    local_ = std::make_unique<Automaton>(*g_);
    std::fill(bits.begin(), bits.end(), 0);
    n_accepted = 0;
    out->deferred.clear();
    for (uint32_t r = 0; r < v.n_ranked(); ++r) out->deferred.push_back(r);
  }
  if (n_accepted * 32 > static_cast<size_t>(v.vocab_size())) {
    out->dense = true;
    out->bits = std::move(bits);
  } else {
    out->ids.reserve(n_accepted);
    for (size_t w = 0; w < bits.size(); ++w)
      for (uint64_t b = bits[w]; b; b &= b - 1)
        out->ids.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(b))));
  }
  out->lcp.resize(out->deferred.size());
  for (size_t k = 1; k < out->deferred.size(); ++k) {
    const std::string& x = v.piece_at_rank(out->deferred[k - 1]);
    const std::string& y = v.piece_at_rank(out->deferred[k]);
    size_t l = 0;
    while (l < x.size() && l < y.size() && x[l] == y[l]) ++l;
    out->lcp[k] = static_cast<uint16_t>(l);
  }
  return out;
}

}  // namespace glass::grammar
