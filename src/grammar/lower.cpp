#include "grammar/lower.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>
#include <unordered_map>

#include "grammar/analysis.h"
#include "grammar/gbnf.h"

namespace glass::grammar {
namespace {

// A repetition of one item: e, or what a repetition of a repetition folds to.
struct Repetition {
  const Expr* item;
  uint32_t min, max;
};

// The expression a one-alternative group or a one-element sequence stands for.
const Expr& unwrapped(const Expr& e) {
  const Expr* x = &e;
  while ((x->kind == Expr::Alt || x->kind == Expr::Seq) && x->items.size() == 1) x = &x->items[0];
  return *x;
}

// x{a,b} repeated {c,d} as one repetition of x where that is the same language: (x?)+, (x*)+ and
// (x{0,n})+ are x*, (x+){c,d} is x{c,} (x* for c = 0), (x?){c,d} is x{0,d}. Left nested, every way
// of splitting a run of x between the outer iterations is a parse of its own: the matcher's stacks
// multiply with each x up to their bound (a fuzzed "[a-z ]{0,5001}+" took seconds a byte). Other
// nestings keep their shape.
std::optional<Repetition> fold(Repetition in, uint32_t c, uint32_t d) {
  const uint32_t a = in.min, b = in.max;
  if (b == 0 || d == 0) return Repetition{in.item, 0, 0};
  if (a == 1 && b == 1) return Repetition{in.item, c, d};
  if (c == 1 && d == 1) return in;
  if (a == 0 && (b == kUnbounded || d == kUnbounded)) return Repetition{in.item, 0, kUnbounded};
  if (a == 1 && b == kUnbounded) return Repetition{in.item, c, kUnbounded};
  if (a == 0 && b == 1) return Repetition{in.item, 0, d};
  return std::nullopt;
}

using RuleBodies = std::unordered_map<std::string_view, const Expr*>;

// The repetition an item stands for, if it is one: the item (unwrapped), or the body of the rule it
// names, as ws in "ws{0,100}" with ws ::= [ \t]* (a fuzzed grammar of that shape took 11 s to walk).
// `follows` bounds the names followed, so a rule that names itself ends the search.
const Expr* repetition_in(const Expr& e, const RuleBodies& bodies, int& follows) {
  const Expr* x = &unwrapped(e);
  while (x->kind == Expr::Ref && follows > 0) {
    const auto it = bodies.find(x->name);
    if (it == bodies.end()) return nullptr;
    --follows;
    x = &unwrapped(*it->second);
  }
  return x->kind == Expr::Repeat ? x : nullptr;
}

Repetition folded(const Expr& e, const RuleBodies& bodies, int& follows) {
  if (const Expr* inner = repetition_in(e.items[0], bodies, follows)) {
    if (std::optional<Repetition> f = fold(folded(*inner, bodies, follows), e.min, e.max)) return *f;
  }
  return Repetition{&e.items[0], e.min, e.max};
}

class Lowerer {
 public:
  Result<Grammar> run(const std::vector<RuleDef>& defs, std::string_view root) {
    for (const RuleDef& d : defs) {
      if (auto it = ids_.find(d.name); it != ids_.end() && defined_[it->second])
        return make_error(
            ErrorCode::InvalidArgument,
            fmt::format("grammar: line {}, column {}: rule '{}' is defined twice", d.line, d.col, d.name));
      defined_[rule_id(d.name)] = true;
    }
    const auto r = ids_.find(std::string(root));
    if (r == ids_.end())
      return make_error(ErrorCode::InvalidArgument, fmt::format("grammar: no rule '{}' (the root)", root));
    g_.root = r->second;
    for (const RuleDef& d : defs) bodies_[d.name] = &d.body;
    for (const RuleDef& d : defs) {
      std::vector<std::vector<Elem>> alts;
      if (!alternatives(d.body, alts)) return *error_;
      set_rule(ids_[d.name], alts);
    }
    if (error_) return *error_;
    for (const auto& [name, id] : ids_)
      if (!defined_[id]) {
        const auto& [line, col] = first_ref_[id];
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("grammar: line {}, column {}: undefined rule '{}'", line, col, name));
      }
    g_.start = static_cast<uint32_t>(g_.elems.size());
    g_.elems.push_back(Elem{ElemKind::Rule, g_.root});
    g_.elems.push_back(Elem{ElemKind::End, 0});
    if (auto st = check_grammar(g_); !st) return st.error();
    return std::move(g_);
  }

 private:
  using Seq = std::vector<Elem>;

  uint32_t rule_id(const std::string& name) {
    auto [it, fresh] = ids_.try_emplace(name, static_cast<uint32_t>(g_.rules.size()));
    if (fresh) {
      g_.rules.push_back(Rule{name, {}});
      defined_.push_back(false);
      first_ref_.push_back({0, 0});
    }
    return it->second;
  }
  uint32_t helper(const std::string& base) {
    std::string name;
    do name = fmt::format("{}_{}", base, ++n_helpers_);
    while (ids_.count(name));
    const uint32_t id = rule_id(name);
    defined_[id] = true;
    g_.rules[id].helper = true;
    return id;
  }
  bool grow(size_t n) {
    size_ += n;
    if (size_ > kMaxElems) {
      if (!error_)
        error_ =
            make_error(ErrorCode::CapacityExceeded,
                       fmt::format("grammar: more than {} elements after expanding repetitions", kMaxElems));
      return false;
    }
    return true;
  }
  void set_rule(uint32_t id, const std::vector<Seq>& alts) {
    for (const Seq& s : alts) {
      g_.rules[id].alts.push_back(static_cast<uint32_t>(g_.elems.size()));
      g_.elems.insert(g_.elems.end(), s.begin(), s.end());
      g_.elems.push_back(Elem{ElemKind::End, 0});
    }
  }
  uint32_t byte_set(const ByteSet& s) {
    auto [it, fresh] = set_ids_.try_emplace(s.bits, static_cast<uint32_t>(g_.sets.size()));
    if (fresh) g_.sets.push_back(s);
    return it->second;
  }
  Elem byte_elem(ByteSet s) { return Elem{ElemKind::Byte, byte_set(s)}; }

  bool alternatives(const Expr& e, std::vector<Seq>& out) {
    for (const Expr& s : e.items) {
      Seq seq;
      if (!sequence(s, seq)) return false;
      out.push_back(std::move(seq));
    }
    return true;
  }

  bool sequence(const Expr& s, Seq& out) {
    for (const Expr& item : s.items)
      if (!element(item, out)) return false;
    return true;
  }

  // A class as elements: one byte set when it is ASCII only, else a call to a helper rule whose
  // alternatives are its UTF-8 sequences (shared by every class with the same ranges).
  bool char_class(const CodeRanges& r, Seq& out) {
    if (r.empty()) {
      error_ = make_error(ErrorCode::InvalidArgument, "grammar: a character class that matches nothing");
      return false;
    }
    if (r.back().second < 0x80) {
      ByteSet s;
      for (const auto& [lo, hi] : r) s.add_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      out.push_back(byte_elem(s));
      return grow(1);
    }
    auto [it, fresh] = classes_.try_emplace(r, 0);
    if (fresh) {
      it->second = helper("char");
      std::vector<Seq> alts;
      ByteSet ascii;
      for (const Utf8Sequence& seq : utf8_sequences(r)) {
        if (seq.size() == 1) {
          ascii.add_range(seq[0].lo, seq[0].hi);
          continue;
        }
        Seq s;
        for (const ByteRange& b : seq) {
          ByteSet bs;
          bs.add_range(b.lo, b.hi);
          s.push_back(byte_elem(bs));
        }
        alts.push_back(std::move(s));
      }
      if (!ascii.empty()) alts.insert(alts.begin(), Seq{byte_elem(ascii)});
      size_t n = 0;
      for (const Seq& a : alts) n += a.size() + 1;
      if (!grow(n)) return false;
      set_rule(it->second, alts);
    }
    out.push_back(Elem{ElemKind::Rule, it->second});
    return grow(1);
  }

  // The item as one element: itself when it lowers to one, else a helper rule.
  bool as_one(const Expr& item, Elem& out) {
    Seq s;
    if (item.kind == Expr::Alt && item.items.size() > 1) {
      std::vector<Seq> alts;
      if (!alternatives(item, alts)) return false;
      const uint32_t h = helper("group");
      set_rule(h, alts);
      out = Elem{ElemKind::Rule, h};
      return grow(1);
    }
    if (!element(item, s)) return false;
    if (s.size() == 1) {
      out = s[0];
      return true;
    }
    const uint32_t h = helper("group");
    set_rule(h, {s});
    out = Elem{ElemKind::Rule, h};
    return grow(1);
  }

  bool repeat(const Expr& e, Seq& out) {
    int follows = 8;
    const Repetition r = folded(e, bodies_, follows);
    Elem x;
    if (r.max == 0) return true;                                          // x{0} matches nothing
    if (r.item->kind == Expr::Seq && r.item->items.empty()) return true;  // ()* matches nothing more
    if (!as_one(*r.item, x)) return false;
    if (!grow(r.min)) return false;
    for (uint32_t i = 0; i < r.min; ++i) out.push_back(x);
    if (r.max == kUnbounded) {
      // star ::= x star |   (tail call: no stack growth per repetition)
      const uint32_t h = helper("star");
      set_rule(h, {Seq{x, Elem{ElemKind::Rule, h}}, Seq{}});
      out.push_back(Elem{ElemKind::Rule, h});
      return grow(5);
    }
    if (r.max == r.min) return true;
    // opt_1 ::= x | ; opt_k ::= x opt_{k-1} | : at most max - min more, each call a tail call.
    const uint32_t n = r.max - r.min;
    if (!grow(size_t{n} * 5)) return false;
    uint32_t prev = 0;
    for (uint32_t k = 1; k <= n; ++k) {
      const uint32_t h = helper("opt");
      if (k == 1)
        set_rule(h, {Seq{x}, Seq{}});
      else
        set_rule(h, {Seq{x, Elem{ElemKind::Rule, prev}}, Seq{}});
      prev = h;
    }
    out.push_back(Elem{ElemKind::Rule, prev});
    return true;
  }

  bool element(const Expr& item, Seq& out) {
    switch (item.kind) {
      case Expr::Literal:
        for (const char c : item.bytes) {
          ByteSet s;
          s.add(static_cast<uint8_t>(c));
          out.push_back(byte_elem(s));
        }
        return grow(item.bytes.size());
      case Expr::Class:
        return char_class(item.ranges, out);
      case Expr::Ref: {
        const uint32_t id = rule_id(item.name);
        if (!defined_[id] && first_ref_[id].first == 0) first_ref_[id] = {item.line, item.col};
        out.push_back(Elem{ElemKind::Rule, id});
        return grow(1);
      }
      case Expr::Repeat:
        return repeat(item, out);
      case Expr::Seq:
        return sequence(item, out);
      case Expr::Alt: {
        if (item.items.size() == 1) return sequence(item.items[0], out);
        Elem e;
        if (!as_one(item, e)) return false;
        out.push_back(e);
        return true;
      }
    }
    return true;
  }

  Grammar g_;
  RuleBodies bodies_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<bool> defined_;
  std::vector<std::pair<int, int>> first_ref_;
  std::map<CodeRanges, uint32_t> classes_;
  std::map<std::array<uint64_t, 4>, uint32_t> set_ids_;
  uint32_t n_helpers_ = 0;
  size_t size_ = 0;
  std::optional<Error> error_;
};

}  // namespace

Result<Grammar> lower(const std::vector<RuleDef>& rules, std::string_view root) {
  return Lowerer().run(rules, root);
}

Result<Grammar> compile_gbnf(std::string_view text, std::string_view root) {
  auto rules = parse_gbnf(text);
  if (!rules) return rules.error();
  return lower(*rules, root);
}

}  // namespace glass::grammar
