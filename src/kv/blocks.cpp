#include "kv/blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace glass::kv {

namespace {

// splitmix64's finalizer: a bijection with full avalanche, so chaining it keeps 64 bits of state.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

uint64_t absorb(uint64_t h, uint64_t v) { return mix64((h ^ v) + kGolden); }

}  // namespace

BlockPool::BlockPool(int32_t n_blocks, int32_t block_size, uint64_t salt)
    : n_blocks_(n_blocks),
      block_size_(block_size),
      salt_(salt),
      refcount_(n_blocks, 0),
      has_hash_(n_blocks, 0),
      hash_(n_blocks, 0),
      parent_(n_blocks, 0),
      contents_(static_cast<size_t>(n_blocks) * block_size, 0),
      prev_(n_blocks + 1, n_blocks),
      next_(n_blocks + 1, n_blocks),
      in_lru_(n_blocks, 0),
      chain_(n_blocks, -1),
      is_free_(n_blocks, 1) {
  GLASS_CHECK(n_blocks >= 0 && block_size > 0);
  // Cache rows are int32_t.
  GLASS_CHECK(static_cast<int64_t>(n_blocks) * block_size <= INT32_MAX);
  size_t buckets = 1;
  while (buckets < static_cast<size_t>(n_blocks)) buckets *= 2;
  bucket_.assign(buckets, -1);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = 0; b < n_blocks; ++b) free_.push_back(b);  // ascending: already a min-heap
}

void BlockPool::free_push(int32_t block) {
  free_.push_back(block);
  std::push_heap(free_.begin(), free_.end(), std::greater<>{});
  is_free_[block] = 1;
}

int32_t BlockPool::free_pop() {
  std::pop_heap(free_.begin(), free_.end(), std::greater<>{});
  const int32_t b = free_.back();
  free_.pop_back();
  is_free_[b] = 0;
  return b;
}

int32_t BlockPool::index_find(uint64_t hash) const {
  for (int32_t b = bucket_[hash & (bucket_.size() - 1)]; b >= 0; b = chain_[b])
    if (hash_[b] == hash) return b;
  return -1;
}

bool BlockPool::index_insert(uint64_t hash, int32_t block) {
  if (index_find(hash) >= 0) return false;
  int32_t& head = bucket_[hash & (bucket_.size() - 1)];
  chain_[block] = head;
  head = block;
  ++n_indexed_;
  return true;
}

void BlockPool::index_erase(uint64_t hash, int32_t block) {
  for (int32_t* at = &bucket_[hash & (bucket_.size() - 1)]; *at >= 0; at = &chain_[*at])
    if (*at == block) {
      *at = chain_[block];
      chain_[block] = -1;
      --n_indexed_;
      return;
    }
}

void BlockPool::lru_push_back(int32_t block) {
  int32_t s = n_blocks_, last = prev_[s];
  prev_[block] = last;
  next_[block] = s;
  next_[last] = block;
  prev_[s] = block;
  in_lru_[block] = 1;
  ++n_lru_;
}

void BlockPool::lru_remove(int32_t block) {
  next_[prev_[block]] = next_[block];
  prev_[next_[block]] = prev_[block];
  prev_[block] = next_[block] = n_blocks_;
  in_lru_[block] = 0;
  --n_lru_;
}

int32_t BlockPool::allocate() {
  int32_t b;
  if (!free_.empty()) {
    b = free_pop();
  } else if (n_lru_ > 0) {
    b = next_[n_blocks_];
    lru_remove(b);
    index_erase(hash_[b], b);
    has_hash_[b] = 0;
    ++evictions_;
  } else {
    return -1;
  }
  refcount_[b] = 1;
  ++n_used_;
  return b;
}

void BlockPool::retain(int32_t block) {
  GLASS_CHECK(block >= 0 && block < n_blocks_ && refcount_[block] > 0);
  ++refcount_[block];
}

void BlockPool::release(int32_t block) {
  GLASS_CHECK(block >= 0 && block < n_blocks_ && refcount_[block] > 0);
  if (--refcount_[block] > 0) return;
  --n_used_;
  if (has_hash_[block])
    lru_push_back(block);
  else
    free_push(block);
}

int32_t BlockPool::refcount(int32_t block) const {
  GLASS_CHECK(block >= 0 && block < n_blocks_);
  return refcount_[block];
}

uint64_t BlockPool::chain_hash(uint64_t salt, uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = absorb(mix64(salt ^ kGolden), parent);
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2)
    h = absorb(h, static_cast<uint32_t>(tokens[i]) |
                      static_cast<uint64_t>(static_cast<uint32_t>(tokens[i + 1])) << 32);
  if (i < tokens.size()) h = absorb(h, static_cast<uint32_t>(tokens[i]));
  // The length keeps a trailing token 0 apart from a shorter block.
  return absorb(h, tokens.size());
}

uint64_t BlockPool::hash_block(uint64_t parent, std::span<const int32_t> tokens) const {
  return chain_hash(salt_, parent, tokens);
}

int32_t BlockPool::lookup(uint64_t parent, std::span<const int32_t> tokens) {
  GLASS_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  return lookup_hashed(hash_block(parent, tokens), parent, tokens);
}

bool BlockPool::contains(uint64_t parent, std::span<const int32_t> tokens) const {
  GLASS_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  const int32_t b = index_find(hash_block(parent, tokens));
  if (b < 0) return false;
  const int32_t* stored = contents_.data() + static_cast<size_t>(b) * block_size_;
  return parent_[b] == parent && std::equal(tokens.begin(), tokens.end(), stored);
}

int64_t BlockPool::cached_prefix(std::span<const int32_t> tokens, uint64_t root) const {
  if (tokens.empty()) return 0;
  const size_t max_blocks = (tokens.size() - 1) / static_cast<size_t>(block_size_);
  uint64_t parent = root;
  size_t k = 0;
  for (; k < max_blocks; ++k) {
    const std::span<const int32_t> block = tokens.subspan(k * block_size_, block_size_);
    if (!contains(parent, block)) break;
    parent = hash_block(parent, block);
  }
  return static_cast<int64_t>(k) * block_size_;
}

int32_t BlockPool::lookup_hashed(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens) {
  const int32_t b = index_find(hash);
  if (b < 0) {
    ++misses_;
    return -1;
  }
  const int32_t* stored = contents_.data() + static_cast<size_t>(b) * block_size_;
  if (parent_[b] != parent || !std::equal(tokens.begin(), tokens.end(), stored)) {
    ++misses_;  // a hash collision: sharing these rows would be wrong
    return -1;
  }
  if (refcount_[b] == 0) {
    lru_remove(b);
    ++n_used_;
  }
  ++refcount_[b];
  ++hits_;
  return b;
}

uint64_t BlockPool::publish(int32_t block, uint64_t parent, std::span<const int32_t> tokens) {
  GLASS_CHECK(tokens.size() == static_cast<size_t>(block_size_));
  uint64_t hash = hash_block(parent, tokens);
  publish_hashed(block, hash, parent, tokens);
  return hash;
}

void BlockPool::publish_hashed(int32_t block, uint64_t hash, uint64_t parent,
                               std::span<const int32_t> tokens) {
  GLASS_CHECK(block >= 0 && block < n_blocks_ && refcount_[block] > 0);
  if (has_hash_[block]) {
    if (hash_[block] == hash) return;
    unpublish(block);  // its rows were rewritten
  }
  if (!index_insert(hash, block)) return;
  has_hash_[block] = 1;
  hash_[block] = hash;
  parent_[block] = parent;
  std::copy(tokens.begin(), tokens.end(), contents_.begin() + static_cast<ptrdiff_t>(block) * block_size_);
}

bool BlockPool::published(int32_t block) const {
  GLASS_CHECK(block >= 0 && block < n_blocks_);
  return has_hash_[block] != 0;
}

void BlockPool::unpublish(int32_t block) {
  GLASS_CHECK(block >= 0 && block < n_blocks_);
  if (!has_hash_[block]) return;
  index_erase(hash_[block], block);
  has_hash_[block] = 0;
  if (refcount_[block] == 0) {
    lru_remove(block);
    free_push(block);
  }
}

Status BlockPool::check() const {
  auto fail = [](const std::string& what) { return make_error(ErrorCode::Internal, "kv pool: " + what); };
  int32_t used = 0, cached_unref = 0, in_lru = 0;
  for (int32_t b = 0; b < n_blocks_; ++b) {
    int32_t rc = refcount_[b];
    bool is_free = is_free_[b] != 0;
    if (rc < 0) return fail(fmt::format("block {}: refcount {} is negative", b, rc));
    if (rc > 0) {
      ++used;
      if (is_free || in_lru_[b])
        return fail(fmt::format("block {}: referenced (refcount {}) but free or in the LRU", b, rc));
    } else if (has_hash_[b]) {
      ++cached_unref;
      if (is_free || !in_lru_[b])
        return fail(fmt::format("block {}: cached-unreferenced but not exactly in the LRU", b));
    } else if (!is_free || in_lru_[b]) {
      return fail(fmt::format("block {}: unreferenced without a hash but not exactly in the free set", b));
    }
    in_lru += in_lru_[b];
    if (has_hash_[b] && index_find(hash_[b]) != b)
      return fail(fmt::format("block {}: holds hash {:#x} but the index does not map it there", b, hash_[b]));
  }
  int32_t free_marked = 0;
  for (int32_t b = 0; b < n_blocks_; ++b) free_marked += is_free_[b];
  if (free_marked != static_cast<int32_t>(free_.size()))
    return fail(fmt::format("{} blocks marked free, the free heap holds {}", free_marked, free_.size()));
  for (int32_t b : free_)
    if (b < 0 || b >= n_blocks_ || !is_free_[b])
      return fail(fmt::format("free heap holds block {}, outside [0, {}) or not marked free", b, n_blocks_));
  if (!std::is_heap(free_.begin(), free_.end(), std::greater<>{})) return fail("free heap out of order");
  int32_t indexed = 0;
  for (size_t i = 0; i < bucket_.size(); ++i)
    for (int32_t b = bucket_[i]; b >= 0; b = chain_[b]) {
      if (b >= n_blocks_ || ++indexed > n_blocks_) return fail("index chains are corrupt");
      if (!has_hash_[b] || (hash_[b] & (bucket_.size() - 1)) != i)
        return fail(fmt::format("index bucket {} holds block {}, which does not hold a hash of it", i, b));
      std::span<const int32_t> stored(contents_.data() + static_cast<size_t>(b) * block_size_, block_size_);
      if (hash_block(parent_[b], stored) != hash_[b])
        return fail(fmt::format("block {}: stored parent and tokens do not hash to {:#x}", b, hash_[b]));
    }
  if (indexed != n_indexed_)
    return fail(fmt::format("index holds {} blocks, count says {}", indexed, n_indexed_));
  // Walk the LRU both ways, bounded so a corrupted cycle cannot hang the check.
  int32_t walked = 0;
  for (int32_t b = next_[n_blocks_]; b != n_blocks_; b = next_[b]) {
    if (b < 0 || b >= n_blocks_ || ++walked > n_blocks_) return fail("LRU list is corrupt");
    if (!in_lru_[b] || refcount_[b] != 0 || !has_hash_[b])
      return fail(fmt::format("block {}: in the LRU list but not cached-unreferenced", b));
    if (next_[prev_[b]] != b) return fail(fmt::format("block {}: LRU links are inconsistent", b));
  }
  if (prev_[next_[n_blocks_]] != n_blocks_ || next_[prev_[n_blocks_]] != n_blocks_)
    return fail("LRU sentinel links are inconsistent");
  if (walked != cached_unref || walked != in_lru || walked != n_lru_)
    return fail(fmt::format("LRU holds {} blocks, {} are cached-unreferenced, count says {}", walked,
                            cached_unref, n_lru_));
  if (used != n_used_) return fail(fmt::format("{} blocks referenced, count says {}", used, n_used_));
  if (static_cast<int64_t>(free_.size()) + n_lru_ + n_used_ != n_blocks_)
    return fail(
        fmt::format("{} free + {} cached + {} used != {} blocks", free_.size(), n_lru_, n_used_, n_blocks_));
  return {};
}

SequenceBlocks::SequenceBlocks(int32_t block_size) : block_size_(block_size) { GLASS_CHECK(block_size > 0); }

void SequenceBlocks::set_root(uint64_t root) {
  GLASS_CHECK(table_.empty() && n_tokens_ == 0);
  root_ = root;
}

void SequenceBlocks::fork(BlockPool& pool, const SequenceBlocks& other) {
  GLASS_CHECK(pool.block_size() == block_size_ && other.block_size_ == block_size_);
  GLASS_CHECK(table_.empty() && n_tokens_ == 0);
  table_ = other.table_;
  tokens_ = other.tokens_;
  hashes_ = other.hashes_;
  n_tokens_ = other.n_tokens_;
  first_live_ = other.first_live_;
  root_ = other.root_;
  for (size_t k = first_live_; k < table_.size(); ++k) pool.retain(table_[k]);
}

void SequenceBlocks::reserve_capacity(int64_t n) {
  const auto blocks = static_cast<size_t>((n + block_size_ - 1) / block_size_);
  table_.reserve(blocks);
  hashes_.reserve(blocks);
  tokens_.reserve(static_cast<size_t>(n));
}

Status SequenceBlocks::reserve(BlockPool& pool, int64_t n_total) {
  GLASS_CHECK(pool.block_size() == block_size_);
  if (n_total < 0)
    return make_error(ErrorCode::InvalidArgument, fmt::format("kv pool: reserve {} tokens", n_total));
  size_t need = static_cast<size_t>((n_total + block_size_ - 1) / block_size_);
  size_t had = table_.size();
  while (table_.size() < need) {
    int32_t b = pool.allocate();
    if (b < 0) {
      size_t wanted = need - had;
      while (table_.size() > had) {
        pool.release(table_.back());
        table_.pop_back();
      }
      return make_error(
          ErrorCode::CapacityExceeded,
          fmt::format("kv pool: no free block for {} tokens (needs {} more blocks, {} of {} free)", n_total,
                      wanted, pool.n_free(), pool.n_blocks()));
    }
    table_.push_back(b);
  }
  return {};
}

int32_t SequenceBlocks::row(int64_t logical_index) const {
  GLASS_CHECK(logical_index >= 0 && logical_index / block_size_ < static_cast<int64_t>(table_.size()));
  return table_[logical_index / block_size_] * block_size_ +
         static_cast<int32_t>(logical_index % block_size_);
}

int64_t SequenceBlocks::match_prefix(BlockPool& pool, std::span<const int32_t> tokens) {
  GLASS_CHECK(pool.block_size() == block_size_);
  GLASS_CHECK(table_.empty() && n_tokens_ == 0);
  if (tokens.empty()) return 0;
  size_t max_blocks = (tokens.size() - 1) / block_size_;
  uint64_t parent = root_;
  for (size_t k = 0; k < max_blocks; ++k) {
    std::span<const int32_t> block = tokens.subspan(k * block_size_, block_size_);
    int32_t b = pool.lookup(parent, block);
    if (b < 0) break;
    table_.push_back(b);
    parent = pool.hash_block(parent, block);
    hashes_.push_back(parent);
  }
  n_tokens_ = static_cast<int64_t>(table_.size()) * block_size_;
  tokens_.assign(tokens.begin(), tokens.begin() + n_tokens_);
  return n_tokens_;
}

void SequenceBlocks::commit(BlockPool& pool, std::span<const int32_t> tokens) {
  GLASS_CHECK(pool.block_size() == block_size_);
  if (tokens.empty()) return;
  int64_t end = n_tokens_ + static_cast<int64_t>(tokens.size());
  GLASS_CHECK(end <= static_cast<int64_t>(table_.size()) * block_size_);
  // Rows just written must be this sequence's alone, or prepare_write was skipped.
  for (int64_t k = n_tokens_ / block_size_; k <= (end - 1) / block_size_; ++k)
    GLASS_CHECK(pool.refcount(table_[k]) == 1 && !pool.published(table_[k]));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  n_tokens_ = end;
  for (size_t k = hashes_.size(); k < static_cast<size_t>(n_tokens_ / block_size_); ++k) {
    uint64_t parent = k == 0 ? root_ : hashes_[k - 1];
    std::span<const int32_t> block(tokens_.data() + k * block_size_, block_size_);
    hashes_.push_back(pool.publish(table_[k], parent, block));
  }
}

Result<bool> SequenceBlocks::prepare_write(BlockPool& pool, int64_t from,
                                           std::vector<std::pair<int32_t, int32_t>>& copies) {
  GLASS_CHECK(pool.block_size() == block_size_);
  if (from < n_tokens_)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("kv pool: write at {} below the {} committed tokens; truncate first", from, n_tokens_));
  size_t first = static_cast<size_t>(from / block_size_);
  size_t copies_before = copies.size();
  std::vector<std::pair<size_t, int32_t>> replaced;  // (table index, shared block it held)
  for (size_t k = first; k < table_.size(); ++k) {
    int32_t src = table_[k];
    // A published block only this sequence holds is copied too while a block can be had, so the
    // prefix it caches survives (a chat returning to an earlier conversation finds it).
    const bool shared = pool.refcount(src) > 1;
    if (!shared && !pool.published(src)) continue;
    int32_t dst = pool.allocate();
    if (dst < 0 && !shared) continue;  // rewritten in place: its published contents are dropped below
    if (dst < 0) {
      for (auto [i, old] : replaced) {
        pool.release(table_[i]);
        table_[i] = old;
      }
      copies.resize(copies_before);
      return make_error(
          ErrorCode::CapacityExceeded,
          fmt::format("kv pool: no free block to copy shared block {} before writing at {}", src, from));
    }
    replaced.emplace_back(k, src);
    table_[k] = dst;
    if (static_cast<int64_t>(k) * block_size_ < n_tokens_) copies.emplace_back(src, dst);
  }
  for (auto [i, old] : replaced) pool.release(old);
  // A block only this sequence holds can be rewritten in place, but its published contents go stale.
  for (size_t k = first; k < table_.size(); ++k) pool.unpublish(table_[k]);
  return copies.size() > copies_before;
}

void SequenceBlocks::truncate(BlockPool& pool, int64_t n) {
  GLASS_CHECK(n >= 0);
  n = std::min(n, n_tokens_);
  size_t keep = static_cast<size_t>((n + block_size_ - 1) / block_size_);
  while (table_.size() > keep) {
    if (table_.size() > first_live_) pool.release(table_.back());  // given-back entries hold nothing
    table_.pop_back();
  }
  first_live_ = std::min(first_live_, table_.size());
  n_tokens_ = n;
  tokens_.resize(n);
  hashes_.resize(std::min(hashes_.size(), static_cast<size_t>(n / block_size_)));
}

void SequenceBlocks::release(BlockPool& pool) {
  for (size_t k = first_live_; k < table_.size(); ++k) pool.release(table_[k]);
  table_.clear();
  tokens_.clear();
  hashes_.clear();
  n_tokens_ = 0;
  first_live_ = 0;
  root_ = 0;
}

void SequenceBlocks::release_below(BlockPool& pool, int64_t n_dead, int32_t null_block) {
  const auto upto = static_cast<size_t>(std::clamp<int64_t>(n_dead, 0, n_tokens_) / block_size_);
  for (; first_live_ < upto; ++first_live_) {
    pool.release(table_[first_live_]);
    table_[first_live_] = null_block;
  }
}

int64_t SequenceBlocks::rewind_windowed(BlockPool& pool, int64_t n, int64_t window) {
  GLASS_CHECK(pool.block_size() == block_size_ && window > 0);
  truncate(pool, n);
  auto block_tokens = [&](size_t k) {
    return std::span<const int32_t>(tokens_).subspan(k * block_size_, block_size_);
  };
  while (n_tokens_ > 0) {
    // A query at position n_tokens_ sees back to n_tokens_ - window + 1.
    const auto lo = static_cast<size_t>(std::max<int64_t>(0, n_tokens_ - window + 1) / block_size_);
    if (lo >= first_live_) break;
    bool cached = true;
    for (size_t k = lo; k < first_live_ && cached; ++k)
      cached = pool.contains(k == 0 ? root_ : hashes_[k - 1], block_tokens(k));
    if (cached) {
      for (size_t k = lo; k < first_live_; ++k)
        table_[k] = pool.lookup(k == 0 ? root_ : hashes_[k - 1], block_tokens(k));
      first_live_ = lo;
      break;
    }
    truncate(pool, (n_tokens_ - 1) / block_size_ * block_size_);
  }
  return n_tokens_;
}

int64_t SequenceBlocks::match_prefix_windowed(BlockPool& pool, std::span<const int32_t> tokens, int64_t limit,
                                              int64_t window, int32_t null_block) {
  GLASS_CHECK(pool.block_size() == block_size_);
  GLASS_CHECK(table_.empty() && n_tokens_ == 0);
  limit = std::min(limit, static_cast<int64_t>(tokens.size())) / block_size_ * block_size_;
  if (limit <= 0) return 0;
  // Every block starts given back; rewind_windowed takes back the ones the window needs.
  tokens_.assign(tokens.begin(), tokens.begin() + limit);
  uint64_t parent = root_;
  for (int64_t k = 0; k < limit / block_size_; ++k) {
    parent =
        pool.hash_block(parent, std::span<const int32_t>(tokens_).subspan(
                                    static_cast<size_t>(k * block_size_), static_cast<size_t>(block_size_)));
    hashes_.push_back(parent);
    table_.push_back(null_block);
  }
  first_live_ = table_.size();
  n_tokens_ = limit;
  return rewind_windowed(pool, limit, window);
}

}  // namespace glass::kv
