#pragma once
// A vocabulary as constrained decoding sees it: each token's bytes and a trie over them, stored
// in depth-first preorder so a walk is one forward pass that skips a rejected node's subtree by
// jumping to its end. Tokens are also numbered in sorted byte order ("rank"): the tokens below a
// trie node are one contiguous run of ranks, so a whole subtree is accepted or deferred as a range.
// Tokens with no bytes (control tokens) are not in the trie: a grammar never allows them, except
// the end-of-generation tokens when the grammar can end.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace glass::grammar {

struct TrieNode {
  uint8_t byte = 0;
  uint16_t depth = 0;     // bytes from the root (the root is depth 0)
  uint32_t skip = 0;      // index of the first node after this subtree
  uint32_t rank = 0;      // first token rank in the subtree
  uint32_t here = 0;      // ranks [rank, here) end exactly at this node
  uint32_t rank_end = 0;  // ranks [rank, rank_end) are the subtree's
};

struct PositionTable;

class TokenIndex {
 public:
  // pieces[id]: the bytes of token id; end_tokens: ids that end generation.
  TokenIndex(std::vector<std::string> pieces, std::vector<int32_t> end_tokens);

  int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
  size_t mask_words() const { return (pieces_.size() + 63) / 64; }
  const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  bool is_end(int32_t id) const { return is_end_[static_cast<size_t>(id)]; }
  const std::vector<TrieNode>& trie() const { return trie_; }
  int32_t token_at_rank(uint32_t rank) const { return by_rank_[rank]; }
  const std::string& piece_at_rank(uint32_t rank) const {
    return pieces_[static_cast<size_t>(by_rank_[rank])];
  }
  size_t n_ranked() const { return by_rank_.size(); }
  uint16_t max_len() const { return max_len_; }

  // Mask tables shared by every grammar bound to this vocabulary, keyed by the exact text of the
  // sub-grammar a table depends on (grammar/bound.cpp): the JSON primitives every schema grammar
  // uses are walked once per vocabulary, not once per schema. Bounded: emptied when full.
  std::shared_ptr<const PositionTable> cached_table(const std::string& signature) const;
  void cache_table(const std::string& signature, std::shared_ptr<const PositionTable> table) const;
  size_t cached_tables() const;

 private:
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const PositionTable>> cache_;
  mutable size_t cache_bytes_ = 0;

  std::vector<std::string> pieces_;
  std::vector<int32_t> end_tokens_;
  std::vector<bool> is_end_;
  std::vector<int32_t> by_rank_;
  std::vector<TrieNode> trie_;
  uint16_t max_len_ = 0;
};

}  // namespace glass::grammar
