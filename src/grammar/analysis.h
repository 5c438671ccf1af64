#pragma once
// Whole-grammar checks run after lowering.
#include "glass/result.h"
#include "grammar/ir.h"

namespace glass::grammar {

// Which rules can match the empty string (a fixpoint over the alternatives).
std::vector<bool> nullable_rules(const Grammar& g);
// Which rules can match some string at all (a fixpoint: an alternative whose calls are all productive).
std::vector<bool> productive_rules(const Grammar& g);

// Left recursion: a rule that can reach itself without consuming a byte through a call that is
// not the last element of its alternative would make a top-down matcher push frames forever, so
// it is an error naming the rules of the cycle. (Cycles through tail calls only are harmless: such
// a call replaces its frame, and the matcher's closure sees the repeated frame and stops.)
Status check_grammar(const Grammar& g);

// What makes a grammar unusable as a constraint, found before any generation: a root that matches
// no string (a rule that only calls itself, a $ref loop), and a grammar too ambiguous for the matcher
// (more than kMaxStacks parse stacks) from its start or after its first byte.
Status check_matchable(const Grammar& g);

}  // namespace glass::grammar

namespace glass::grammar {

// The bytes that can come first in each rule (FIRST1) and right after each rule ends (FOLLOW1,
// over every call site; the root is followed by nothing). The mask tables use FOLLOW1 to tell
// which tokens that leave a rule might continue in some caller.
struct FirstFollow {
  std::vector<ByteSet> first, follow;
  std::vector<bool> nullable;
  std::vector<uint32_t> rule_of;  // element position -> the rule whose alternative holds it
};
FirstFollow first_follow(const Grammar& g);

}  // namespace glass::grammar
