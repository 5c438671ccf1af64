#pragma once
// One sequence's position in a bound grammar: its automaton state, the token mask for the next
// step and advancing by an accepted token. Not thread-safe (one per sequence); the BoundGrammar
// it reads is shared.
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "grammar/automaton.h"
#include "grammar/bound.h"

namespace glass::grammar {

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const BoundGrammar> bound);

  // Bits over the vocabulary (TokenIndex::mask_words words): the tokens the grammar allows next;
  // the end tokens when it can end here. Errors: the grammar is too ambiguous (too many stacks).
  Status fill_mask(std::span<uint64_t> mask);
  // Advances by a token's bytes (an end token: only when can_end()). False when rejected; the
  // state is then unchanged.
  bool accept_token(int32_t id);
  bool accept_bytes(std::string_view bytes);
  bool can_end() const { return a_.can_end(state_); }
  bool can_continue() const { return !a_.tops(state_).empty(); }
  bool dead() const { return state_ == Automaton::kDead; }
  bool overflowed() const { return a_.overflowed(); }
  void reset();
  const BoundGrammar& bound() const { return *bound_; }

 private:
  void check_deferred(const PositionTable& t, std::span<uint64_t> mask);
  void maybe_flush();

  std::shared_ptr<const BoundGrammar> bound_;
  Automaton a_;
  int32_t state_ = 0;
  std::vector<int32_t> depth_state_;  // deferred walks: the state after each byte of the token
  std::vector<StackKey> keys_;
  // Masks by state: a sequence inside a string or number revisits the same state token after token.
  struct CachedMask {
    int32_t state = -1;
    std::vector<uint64_t> bits;
  };
  std::vector<CachedMask> cache_;
  size_t cache_next_ = 0;
};

}  // namespace glass::grammar
