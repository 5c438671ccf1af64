#pragma once
// A grammar bound to one vocabulary: what the token masks of every sequence under it share.
//
// A table is kept per stack suffix: a stack top p (a Byte element) with the return addresses of
// the kContext frames below it. It says which tokens that suffix decides alone: a walk over the
// token trie from the one-stack state [p, frames...] over a bottom standing for "whatever lies
// below" accepts a token when some path consumes all its bytes, rejects it when every path dies
// without returning past the bottom, and defers it when a path returned past the bottom before the
// token's end and the token's next byte can follow the bottom frame's rule somewhere in the grammar
// (FOLLOW1: a byte no caller allows is a rejection in every context). A sequence's mask is the union
// of its tops' accepted sets plus the deferred tokens checked against its full state, so the
// per-token cost follows the (small) deferred sets, not the vocabulary. The frames give the walk
// enough context that tiny rules (a character class, a string's character loop) do not defer
// every token that leaves them. Tables are built on first use and kept.
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "grammar/analysis.h"
#include "grammar/automaton.h"
#include "grammar/ir.h"
#include "grammar/token_index.h"

namespace glass::grammar {

struct PositionTable {
  bool dense = false;
  std::vector<uint64_t> bits;      // dense: the accepted tokens as a mask
  std::vector<int32_t> ids;        // sparse: the accepted token ids
  std::vector<uint32_t> deferred;  // token ranks, ascending
  std::vector<uint16_t> lcp;       // bytes deferred[i] shares with deferred[i - 1]
};

// Most frames below the top that key a table. Frames are taken only while the frame above belongs
// to a helper rule (a character class, group or repetition made by lowering): a table then spans
// the written rule around them, so tables are shared by every grammar using that rule (a JSON
// string, a uuid), while a class or loop alone would defer nearly every token that leaves it.
inline constexpr size_t kContext = 3;
// A stack suffix: the top's position, then the return addresses taken (kNone pads), then 1 when
// the stack ends there (nothing may follow) or 0 when more frames lie below.
using StackKey = std::array<uint32_t, kContext + 2>;
inline constexpr uint32_t kNone = 0xFFFFFFFF;
// A table's walk stops at this many bytes: longer tokens it has not rejected by then are deferred
// (Llama 3 has 344 of 128k past 24 bytes). So a table depends only on the grammar within that many bytes of
// its stack suffix, and the tables of x{0,30} and x{0,40} past their first 24 items are the same table.
inline constexpr uint16_t kWalkDepth = 24;

// Rules within a table's reach past which its signature is not worth computing (it would list them
// all, at every new stack suffix).
inline constexpr size_t kMaxSignatureRules = 512;

class BoundGrammar {
 public:
  BoundGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenIndex> vocab);

  const Grammar& grammar() const { return *g_; }
  const TokenIndex& vocab() const { return *vocab_; }
  const std::vector<uint32_t>& rule_of() const { return ff_.rule_of; }
  // The table of a stack suffix, built on first use. Thread-safe; the reference stays valid.
  const PositionTable& table(const StackKey& key) const;
  size_t tables_built() const;

 private:
  std::unique_ptr<PositionTable> build(const StackKey& key) const;
  // The text a table depends on, the key of the tables shared across grammars (TokenIndex's cache);
  // nullopt where more than kMaxSignatureRules rules lie within reach: the table is then not shared.
  std::optional<std::string> signature(const StackKey& key) const;
  const ByteSet& follow_of(const StackKey& key) const;

  std::shared_ptr<const Grammar> g_;
  std::shared_ptr<const TokenIndex> vocab_;
  FirstFollow ff_;
  std::vector<uint32_t> min_len_;  // the fewest bytes each rule matches (capped past kWalkDepth)
  mutable std::mutex mu_;
  mutable std::map<StackKey, std::shared_ptr<const PositionTable>> tables_;
  mutable std::unique_ptr<Automaton> local_;  // the walks' states, over the bottom
};

}  // namespace glass::grammar
