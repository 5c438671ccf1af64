#include "grammar/token_index.h"

#include <algorithm>

#include "grammar/bound.h"

namespace glass::grammar {

TokenIndex::TokenIndex(std::vector<std::string> pieces, std::vector<int32_t> end_tokens)
    : pieces_(std::move(pieces)), end_tokens_(std::move(end_tokens)), is_end_(pieces_.size(), false) {
  std::erase_if(end_tokens_, [&](int32_t id) { return id < 0 || static_cast<size_t>(id) >= pieces_.size(); });
  for (const int32_t id : end_tokens_) is_end_[static_cast<size_t>(id)] = true;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    // Longer pieces than a trie depth can hold never match a grammar anyway (none is that long).
    if (pieces_[i].empty() || is_end_[i] || pieces_[i].size() > 0xFFFF) continue;
    by_rank_.push_back(static_cast<int32_t>(i));
    max_len_ = std::max<uint16_t>(max_len_, static_cast<uint16_t>(pieces_[i].size()));
  }
  std::stable_sort(by_rank_.begin(), by_rank_.end(), [&](int32_t a, int32_t b) {
    return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
  });
  // Preorder construction from the sorted pieces: `open` holds the path to the current node.
  trie_.push_back(TrieNode{});
  std::vector<uint32_t> open{0};
  auto close_to = [&](size_t depth, uint32_t rank) {
    while (open.size() > depth + 1) {
      TrieNode& n = trie_[open.back()];
      n.skip = static_cast<uint32_t>(trie_.size());
      n.rank_end = rank;
      open.pop_back();
    }
  };
  const std::string* prev = nullptr;
  for (uint32_t r = 0; r < by_rank_.size(); ++r) {
    const std::string& s = pieces_[static_cast<size_t>(by_rank_[r])];
    size_t lcp = 0;
    if (prev) {
      while (lcp < prev->size() && lcp < s.size() && (*prev)[lcp] == s[lcp]) ++lcp;
      lcp = std::min(lcp, open.size() - 1);
    }
    close_to(lcp, r);
    for (size_t d = lcp; d < s.size(); ++d) {
      TrieNode n;
      n.byte = static_cast<uint8_t>(s[d]);
      n.depth = static_cast<uint16_t>(d + 1);
      n.rank = r;
      n.here = r;
      open.push_back(static_cast<uint32_t>(trie_.size()));
      trie_.push_back(n);
    }
    trie_[open.back()].here = r + 1;  // duplicates of the same bytes extend this run
    prev = &s;
  }
  close_to(0, static_cast<uint32_t>(by_rank_.size()));
  trie_[0].skip = static_cast<uint32_t>(trie_.size());
  trie_[0].rank_end = static_cast<uint32_t>(by_rank_.size());
}

std::shared_ptr<const PositionTable> TokenIndex::cached_table(const std::string& signature) const {
  std::lock_guard lk(cache_mu_);
  const auto it = cache_.find(signature);
  return it == cache_.end() ? nullptr : it->second;
}

void TokenIndex::cache_table(const std::string& signature, std::shared_ptr<const PositionTable> table) const {
  constexpr size_t kMaxCacheBytes = size_t{512} << 20;
  const size_t bytes =
      signature.size() + table->bits.size() * 8 + table->ids.size() * 4 + table->deferred.size() * 6;
  std::lock_guard lk(cache_mu_);
  if (cache_bytes_ + bytes > kMaxCacheBytes) {  // tables already handed out stay alive with their users
    cache_.clear();
    cache_bytes_ = 0;
  }
  if (cache_.emplace(signature, std::move(table)).second) cache_bytes_ += bytes;
}

size_t TokenIndex::cached_tables() const {
  std::lock_guard lk(cache_mu_);
  return cache_.size();
}

}  // namespace glass::grammar
