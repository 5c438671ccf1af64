#pragma once
// Host-side bookkeeping for a paged KV cache (block ids only; the KV tensors live elsewhere and
// block b covers cache rows [b * block_size, (b + 1) * block_size)).
//
// Blocks: a pool of n_blocks fixed-size blocks shared by many sequences. Each block is exactly one
// of: free, referenced (refcount > 0), or cached-unreferenced (refcount 0 but still holding a
// published prefix, so a later prompt can reuse its rows).
//
// Chained hashes: a full block is published under hash(salt, parent hash, its tokens), the parent
// being the hash of the block before it, so one hash names a whole prefix. The first block's parent
// is the sequence's root: 0, or the identity of what else a request changes the rows by (an adapter
// or control vector and its scale). The pool's salt stands for what every sequence shares (model,
// cache types).
// Lookups also compare the stored parent and tokens, so a hash collision never shares rows.
//
// LRU: cached-unreferenced blocks sit in an intrusive list in release order; allocate takes a
// free block (lowest id first) and only when none is left evicts the least recently released one.
//
// Copy-on-write: shared blocks are full and published, so sequences normally write only their own
// blocks. After truncating into a shared block, prepare_write hands the sequence a fresh block and
// tells the caller which rows to copy.
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "glass/result.h"

namespace glass::kv {

class BlockPool {
 public:
  BlockPool(int32_t n_blocks, int32_t block_size, uint64_t salt);

  int32_t block_size() const { return block_size_; }
  int32_t n_blocks() const { return n_blocks_; }
  uint64_t salt() const { return salt_; }
  // Allocatable now: truly free plus cached-unreferenced (evictable).
  int32_t n_free() const { return static_cast<int32_t>(free_.size()) + n_lru_; }
  int32_t n_used() const { return n_used_; }
  // Blocks holding a published hash, referenced or not.
  int32_t n_cached() const { return n_indexed_; }

  // A block with refcount 1 and no hash, or -1 when every block is referenced (the caller
  // preempts). Never throws.
  int32_t allocate();
  // Both need a referenced block.
  void retain(int32_t block);
  void release(int32_t block);
  int32_t refcount(int32_t block) const;

  static uint64_t chain_hash(uint64_t salt, uint64_t parent, std::span<const int32_t> tokens);
  uint64_t hash_block(uint64_t parent, std::span<const int32_t> tokens) const;
  // The block holding exactly (parent, tokens), retained, or -1. Counts a hit or a miss.
  int32_t lookup(uint64_t parent, std::span<const int32_t> tokens);
  // Whether lookup would find it; neither retains nor counts.
  bool contains(uint64_t parent, std::span<const int32_t> tokens) const;
  // The tokens SequenceBlocks::match_prefix would take for this prompt now (whole leading blocks in
  // the index, at least one token left over); neither retains nor counts.
  int64_t cached_prefix(std::span<const int32_t> tokens, uint64_t root = 0) const;
  // Records that the referenced, full block holds (parent, tokens) and returns its chain hash. When
  // another block already holds that hash the first one is kept and this block stays unpublished.
  uint64_t publish(int32_t block, uint64_t parent, std::span<const int32_t> tokens);
  bool published(int32_t block) const;
  // Drops the block's hash: its rows are about to change.
  void unpublish(int32_t block);

  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t evictions() const { return evictions_; }

  // Verifies every invariant by scanning the whole pool; for tests and debugging.
  Status check() const;

 private:
  friend struct BlockPoolTestPeer;  // forges hash collisions

  int32_t lookup_hashed(uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  void publish_hashed(int32_t block, uint64_t hash, uint64_t parent, std::span<const int32_t> tokens);
  void lru_push_back(int32_t block);
  void lru_remove(int32_t block);
  void free_push(int32_t block);
  int32_t free_pop();
  // The index from chain hash to block: buckets of blocks linked through chain_ (no allocation after
  // construction, so the token loop never allocates).
  int32_t index_find(uint64_t hash) const;
  bool index_insert(uint64_t hash, int32_t block);
  void index_erase(uint64_t hash, int32_t block);

  int32_t n_blocks_;
  int32_t block_size_;
  uint64_t salt_;

  std::vector<int32_t> refcount_;
  std::vector<uint8_t> has_hash_;
  std::vector<uint64_t> hash_;
  std::vector<uint64_t> parent_;   // per published block: its parent hash
  std::vector<int32_t> contents_;  // per published block: its block_size tokens

  // Intrusive LRU over block ids; node n_blocks_ is the sentinel, next of it is the oldest.
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_lru_;
  int32_t n_lru_ = 0;

  std::vector<int32_t> bucket_;  // power-of-two count; -1: empty
  std::vector<int32_t> chain_;   // per block: the next block of its bucket, -1 at the end
  int32_t n_indexed_ = 0;
  std::vector<int32_t> free_;  // a min-heap of free block ids (lowest first), capacity n_blocks
  std::vector<uint8_t> is_free_;

  int32_t n_used_ = 0;
  uint64_t hits_ = 0, misses_ = 0, evictions_ = 0;
};

// One sequence's block table: the blocks backing its rows in logical order, the tokens whose rows
// are written, and the chain hashes of its full blocks.
class SequenceBlocks {
 public:
  explicit SequenceBlocks(int32_t block_size);

  // For an empty sequence: the parent hash of its first block (0: the plain model).
  void set_root(uint64_t root);
  uint64_t root() const { return root_; }
  // For an empty sequence: holds what `other` holds (every block retained, so the first write into
  // a shared block copies it: prepare_write).
  void fork(BlockPool& pool, const SequenceBlocks& other);

  // Makes the table cover n_total tokens; on failure nothing allocated by this call is kept.
  Status reserve(BlockPool& pool, int64_t n_total);
  // The cache row holding logical token i.
  int32_t row(int64_t logical_index) const;
  // For an empty sequence: takes the cached blocks matching the prompt's leading full blocks and
  // returns how many tokens they cover. Leaves at least one token, whose logits the caller needs.
  int64_t match_prefix(BlockPool& pool, std::span<const int32_t> tokens);
  // After the rows of tokens (appended at size()) were written: records them and publishes every
  // block that became full. The written blocks must be this sequence's alone and unpublished (true
  // of reserved blocks; after truncate, call prepare_write before writing).
  void commit(BlockPool& pool, std::span<const int32_t> tokens);
  // Before writing rows at logical index >= from (from >= size()): replaces every shared block in
  // the write range by a fresh one, appending (src, dst) to copies where dst must first receive the
  // rows of src below size(); a published block held by this sequence alone likewise while the pool
  // has a block to give, else it is rewritten in place and unpublished. Returns whether anything was
  // appended to copies.
  Result<bool> prepare_write(BlockPool& pool, int64_t from, std::vector<std::pair<int32_t, int32_t>>& copies);
  // Keeps the first n tokens (n > size() keeps size()) and releases the blocks wholly past them,
  // reserved ones included.
  void truncate(BlockPool& pool, int64_t n);
  void release(BlockPool& pool);

  // Sliding-window layers. A windowed sequence gives back the full blocks below `n_dead` (rows no
  // later query's window reaches) and names null_block in their entries: a block of zeros nobody
  // writes, so a kernel reading a whole key block past a window's edge reads finite rows it masks.
  void release_below(BlockPool& pool, int64_t n_dead, int32_t null_block);
  // Keeps at most n tokens such that the table holds every block a query at the new end sees
  // (positions end - window + 1 .. end - 1), taking given-back blocks back from the prefix index
  // while they are cached there; tries n, then each block boundary below it. Returns the tokens kept.
  int64_t rewind_windowed(BlockPool& pool, int64_t n, int64_t window);
  // For an empty sequence: match_prefix for a windowed table, up to `limit` tokens (a block
  // multiple the full-attention table matched): only the blocks the window needs are held.
  int64_t match_prefix_windowed(BlockPool& pool, std::span<const int32_t> tokens, int64_t limit,
                                int64_t window, int32_t null_block);
  // Entries [0, first_live()) were given back and name the null block.
  int64_t first_live() const { return static_cast<int64_t>(first_live_); }

  // Room for a sequence of n tokens, so that growing to it never allocates (the token loop).
  void reserve_capacity(int64_t n);

  std::span<const int32_t> blocks() const { return table_; }
  // The chain hash of full block k (k < size() / block_size()): the key of the prefix it ends.
  uint64_t hash(size_t k) const { return hashes_[k]; }
  int64_t size() const { return n_tokens_; }
  std::span<const int32_t> tokens() const { return tokens_; }
  int32_t block_size() const { return block_size_; }

 private:
  int32_t block_size_;
  std::vector<int32_t> table_;
  int64_t n_tokens_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<uint64_t> hashes_;  // chain hash of each full block, in order
  size_t first_live_ = 0;         // entries below were given back (sliding-window tables)
  uint64_t root_ = 0;             // the first block's parent hash
};

}  // namespace glass::kv
