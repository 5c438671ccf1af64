#include "kv/state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace glass::kv {
namespace {

StateSpec paged_spec(int64_t rows, int64_t block, int64_t max_blocks, int32_t n_seq, int64_t window_rows = 0,
                     int64_t window = 0) {
  StateSpec s;
  s.groups.push_back({rows, block, max_blocks, 0});
  if (window > 0) s.groups.push_back({window_rows, block, max_blocks, window});
  s.n_seq = n_seq;
  s.n_batch = 64;
  s.salt = 0x1234;
  return s;
}

std::unique_ptr<State> make(const StateSpec& spec) {
  auto s = State::create(spec);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(*s) : nullptr;
}

// The cache rows as a model would leave them: each row holds a value that depends on the whole
// prefix up to its token and the sequence's identity, so a row shared between sequences (or reused
// from the prefix index) is right only when their prefixes and identities agree.
struct Rows {
  std::vector<std::vector<uint64_t>> group;  // per group: per cache row

  explicit Rows(const State& s) {
    for (const GroupSpec& g : s.spec().groups) group.emplace_back(static_cast<size_t>(g.rows), 0);
  }
  // A recurrent slot: each token folds into what the slot held (zeros at the start).
  static uint64_t fold(uint64_t state, int32_t token) {
    return (state ^ static_cast<uint64_t>(token + 7)) * 0x9e3779b1ull;
  }
  static uint64_t recurrent_value(std::span<const int32_t> prefix) {
    uint64_t h = 0;
    for (int32_t t : prefix) h = fold(h, t);
    return h;
  }
  static uint64_t value(uint64_t identity, std::span<const int32_t> prefix) {
    uint64_t h = identity * 0x9e3779b97f4a7c15ull + 1;
    for (int32_t t : prefix) h = (h ^ static_cast<uint64_t>(t)) * 0x100000001b3ull;
    return h;
  }
  // Pays what the state owes, as the session does before a plan call.
  void pay(State& s) {
    for (const RowCopy& c : s.owed()) {
      const int64_t B = s.spec().groups[static_cast<size_t>(c.group)].block_size;
      auto& g = group[static_cast<size_t>(c.group)];
      for (int64_t r = 0; r < c.rows; ++r)
        g[static_cast<size_t>(c.dst * B + r)] = g[static_cast<size_t>(c.src * B + r)];
    }
    s.paid();
  }
};

// One step of n tokens for seq, as a session runs it: prepare, copy, write each row, commit.
Status step(State& s, Rows& rows, int32_t seq, std::span<const int32_t> toks, uint64_t identity = 0) {
  if (auto st = s.prepare(seq, static_cast<int64_t>(toks.size())); !st) return st;
  rows.pay(s);
  std::vector<int32_t> prefix(s.tokens(seq).begin(), s.tokens(seq).end());
  for (int32_t t : toks) {
    const auto pos = static_cast<int64_t>(prefix.size());
    prefix.push_back(t);
    for (size_t g = 0; g < s.n_groups(); ++g) {
      uint64_t& row = rows.group[g][static_cast<size_t>(s.slot(g, seq, pos))];
      row = s.spec().groups[g].kind == GroupKind::Recurrent ? Rows::fold(row, t)
                                                            : Rows::value(identity, prefix);
    }
    s.commit(seq, std::span<const int32_t>(&t, 1));
  }
  s.finish_step(seq);
  rows.pay(s);
  return {};
}

// Every row a sequence's table still names holds what that sequence's prefix would write there.
void expect_rows_right(const State& s, const Rows& rows, int32_t seq, uint64_t identity = 0) {
  const std::span<const int32_t> toks = s.tokens(seq);
  for (size_t g = 0; g < s.n_groups(); ++g) {
    if (s.spec().groups[g].kind == GroupKind::Recurrent) {
      if (s.length(seq) > 0) {
        ASSERT_EQ(rows.group[g][static_cast<size_t>(s.slot(g, seq, 0))], Rows::recurrent_value(toks))
            << "group " << g << " sequence " << seq << " at " << s.length(seq);
      }
      continue;
    }
    const SequenceBlocks& sb = s.blocks(g, seq);
    const int64_t B = sb.block_size();
    for (int64_t pos = sb.first_live() * B; pos < s.length(seq); ++pos)
      ASSERT_EQ(rows.group[g][static_cast<size_t>(sb.row(pos))],
                Rows::value(identity, toks.subspan(0, pos + 1)))
          << "group " << g << " sequence " << seq << " position " << pos;
  }
}

std::vector<int32_t> iota_tokens(int n, int from = 1) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), from);
  return t;
}

TEST(KvState, RefusesSpecsThatMakeNoPool) {
  EXPECT_FALSE(State::create({}).ok());
  EXPECT_FALSE(State::create(paged_spec(30, 16, 4, 1)).ok());  // rows not a block multiple
  EXPECT_FALSE(State::create(paged_spec(64, 16, 4, 0)).ok());
  StateSpec two_full = paged_spec(64, 16, 4, 1);
  two_full.groups.push_back(two_full.groups[0]);
  EXPECT_FALSE(State::create(two_full).ok());
}

TEST(KvState, PagedStepsPublishAndAReleasedPrefixIsFoundAgain) {
  auto s = make(paged_spec(128, 4, 8, 2));
  Rows rows(*s);
  const auto toks = iota_tokens(10);
  ASSERT_TRUE(step(*s, rows, 0, toks).ok());
  EXPECT_EQ(s->length(0), 10);
  expect_rows_right(*s, rows, 0);
  EXPECT_EQ(s->counts().used, 3);
  ASSERT_TRUE(s->check().ok());
  // Block tables: sequence 0's three blocks, then -1.
  const std::span<const int32_t> table(s->step(0).block_tables.data(), 8);
  EXPECT_EQ(std::count(table.begin(), table.end(), -1), 5);
  s->release(0);
  EXPECT_EQ(s->counts().used, 0);
  EXPECT_EQ(s->counts().cached, 2);  // the two full blocks stay indexed
  std::vector<int32_t> again = toks;
  again.push_back(99);
  EXPECT_EQ(s->cached_prefix(again), 8);
  EXPECT_EQ(s->match_prefix(1, again), 8);
  expect_rows_right(*s, rows, 1);
  ASSERT_TRUE(step(*s, rows, 1, std::span(again).subspan(8)).ok());
  expect_rows_right(*s, rows, 1);
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, IdentityKeysKeepAdaptersApart) {
  auto s = make(paged_spec(128, 4, 8, 3));
  Rows rows(*s);
  const auto toks = iota_tokens(13);
  const uint64_t lora = 0xabcdef;
  s->set_identity(0, lora);
  ASSERT_TRUE(step(*s, rows, 0, toks, lora).ok());
  s->release(0);
  // The plain model finds nothing of the adapter's rows; the same identity finds them all.
  EXPECT_EQ(s->cached_prefix(toks), 0);
  EXPECT_EQ(s->cached_prefix(toks, lora), 12);
  EXPECT_EQ(s->cached_prefix(toks, lora + 1), 0);
  EXPECT_EQ(s->match_prefix(1, toks), 0);
  s->set_identity(2, lora);
  EXPECT_EQ(s->match_prefix(2, toks), 12);
  expect_rows_right(*s, rows, 2, lora);
  ASSERT_TRUE(s->check().ok());
  // A released sequence forgets its identity.
  s->release(2);
  EXPECT_EQ(s->match_prefix(2, toks), 0);
}

TEST(KvState, RollBackKeepsThePublishedPrefixAndRewritesACopy) {
  auto s = make(paged_spec(64, 4, 8, 1));
  Rows rows(*s);
  const auto toks = iota_tokens(12);
  ASSERT_TRUE(step(*s, rows, 0, toks).ok());
  // Speculative decoding rejected the last 6: back to 6, then other tokens.
  EXPECT_EQ(s->truncate(0, 6), 6);
  EXPECT_EQ(s->length(0), 6);
  ASSERT_TRUE(s->check().ok());
  const std::vector<int32_t> other{50, 51, 52};
  ASSERT_TRUE(step(*s, rows, 0, other).ok());
  expect_rows_right(*s, rows, 0);
  // The published block [4, 8) of the first run survives in the index for a later prompt.
  EXPECT_EQ(s->cached_prefix(iota_tokens(9)), 8);
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, ForkSharesBlocksUntilAWriteCopiesThem) {
  auto s = make(paged_spec(64, 4, 8, 3));
  Rows rows(*s);
  const auto toks = iota_tokens(10);
  ASSERT_TRUE(step(*s, rows, 0, toks).ok());
  ASSERT_TRUE(s->fork(0, 1).ok());
  EXPECT_TRUE(s->owed().empty());  // paged: shared, not copied
  EXPECT_EQ(s->counts().used, 3);
  ASSERT_TRUE(s->check().ok());
  EXPECT_FALSE(s->fork(0, 1).ok());  // not empty
  // Both continue differently: each write into the shared partial block copies it first.
  const std::vector<int32_t> a{70}, b{80, 81};
  ASSERT_TRUE(step(*s, rows, 1, b).ok());
  ASSERT_TRUE(step(*s, rows, 0, a).ok());
  expect_rows_right(*s, rows, 0);
  expect_rows_right(*s, rows, 1);
  EXPECT_EQ(s->counts().used, 4);  // two shared full blocks, one partial each
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, FixedAllocationIsDenseRunsOfTheSamePools) {
  StateSpec spec = paged_spec(64, 4, 8, 4);  // 16 blocks: two sequences of 8 blocks
  spec.allocation = Allocation::Fixed;
  auto s = make(spec);
  Rows rows(*s);
  EXPECT_EQ(s->n_seq_usable(), 2);
  EXPECT_EQ(s->sequence_capacity(), 32);
  EXPECT_EQ(s->room(1), 32);
  EXPECT_EQ(s->room(2), 0);
  const auto toks = iota_tokens(6);
  ASSERT_TRUE(step(*s, rows, 1, toks).ok());
  EXPECT_EQ(s->slot(0, 1, 5), 32 + 5);
  const std::span<const int32_t> table(s->step(0).block_tables.data() + 8, 8);
  for (int b = 0; b < 8; ++b) EXPECT_EQ(table[static_cast<size_t>(b)], 8 + b);
  EXPECT_EQ(s->match_prefix(0, toks), 0);
  EXPECT_EQ(s->cached_prefix(toks), 0);
  ASSERT_TRUE(s->fork(1, 0).ok());
  ASSERT_EQ(s->owed().size(), 2u);  // two blocks of rows
  EXPECT_EQ(s->owed()[0].src, 8);
  EXPECT_EQ(s->owed()[0].dst, 0);
  rows.pay(*s);
  EXPECT_EQ(rows.group[0][5], Rows::value(0, toks));
  EXPECT_EQ(s->truncate(0, 3), 3);
  EXPECT_EQ(s->prepare(2, 1).error().code, ErrorCode::CapacityExceeded);
  EXPECT_EQ(s->prepare(1, 27).error().code, ErrorCode::CapacityExceeded);  // past its run
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, WindowedGroupGivesBackAndRollBackRecomputesWhatIsGone) {
  // Window 6 in blocks of 2: between steps a sequence holds at most 3 blocks + the null block.
  auto s = make(paged_spec(128, 2, 32, 2, 64, 6));
  Rows rows(*s);
  const auto toks = iota_tokens(40);
  for (size_t i = 0; i < toks.size(); ++i) {
    ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(i, 1)).ok());
    ASSERT_LE(s->pool(1).n_used(), 1 + 4) << "after " << i + 1;
  }
  EXPECT_GT(s->blocks(1, 0).first_live(), 0);
  expect_rows_right(*s, rows, 0);
  ASSERT_TRUE(s->check().ok());
  // Back to 20: the window before 20 was given back but its blocks are still in the index.
  EXPECT_EQ(s->truncate(0, 20), 20);
  expect_rows_right(*s, rows, 0);
  ASSERT_TRUE(s->check().ok());
  // A second sequence evicts the index; a rollback then keeps less and the caller evaluates again.
  for (int k = 0; k < 50; ++k) {
    const int32_t t = 1000 + k;
    ASSERT_TRUE(step(*s, rows, 1, std::span(&t, 1)).ok());
  }
  s->release(1);
  const int64_t kept = s->truncate(0, 10);
  EXPECT_LE(kept, 10);
  ASSERT_TRUE(s->check().ok());
  expect_rows_right(*s, rows, 0);
}

StateSpec hybrid_spec(int32_t checkpoints) {
  StateSpec spec = paged_spec(128, 4, 16, 2);
  spec.groups.push_back({2 + checkpoints + 1, 1, 1, 0, GroupKind::Recurrent});
  return spec;
}

TEST(KvState, RecurrentStateIsCheckpointedAtBlockEndsAndAPrefixHitRestoresIt) {
  auto s = make(hybrid_spec(4));
  Rows rows(*s);
  const auto toks = iota_tokens(10);
  for (size_t at : {0, 4, 8})  // steps ending at 4, 8 (block ends: checkpoints) and 10
    ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(at, std::min<size_t>(4, 10 - at))).ok());
  expect_rows_right(*s, rows, 0);
  s->release(0);
  std::vector<int32_t> again = toks;
  again.push_back(77);
  // The attention blocks cover 8 tokens, and the state after 8 was kept: 8 are not evaluated again.
  EXPECT_EQ(s->match_prefix(1, again), 8);
  ASSERT_EQ(s->owed().size(), 1u);  // the restore
  rows.pay(*s);
  expect_rows_right(*s, rows, 1);
  ASSERT_TRUE(step(*s, rows, 1, std::span(again).subspan(8)).ok());
  expect_rows_right(*s, rows, 1);
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, RecurrentRollBackGoesToTheLatestCheckpointBelow) {
  auto s = make(hybrid_spec(4));
  Rows rows(*s);
  const auto toks = iota_tokens(14);
  for (size_t at = 0; at < toks.size(); at += 4)
    ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(at, std::min<size_t>(4, toks.size() - at))).ok());
  EXPECT_EQ(s->truncate(0, 14), 14);  // nothing to undo: no restore
  EXPECT_TRUE(s->owed().empty());
  EXPECT_EQ(s->truncate(0, 11), 8);  // the caller evaluates 8..10 again
  rows.pay(*s);
  expect_rows_right(*s, rows, 0);
  EXPECT_EQ(s->truncate(0, 7), 4);
  rows.pay(*s);
  expect_rows_right(*s, rows, 0);
  ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(4, 3)).ok());
  expect_rows_right(*s, rows, 0);
  // A fork copies the live state; each then goes its own way.
  ASSERT_TRUE(s->fork(0, 1).ok());
  rows.pay(*s);
  expect_rows_right(*s, rows, 1);
  const std::vector<int32_t> a{40}, b{50};
  ASSERT_TRUE(step(*s, rows, 0, a).ok());
  ASSERT_TRUE(step(*s, rows, 1, b).ok());
  expect_rows_right(*s, rows, 0);
  expect_rows_right(*s, rows, 1);
  ASSERT_TRUE(s->check().ok());
}

TEST(KvState, RecurrentCheckpointsAreEvictedOldestFirst) {
  auto s = make(hybrid_spec(1));  // room for one checkpoint
  Rows rows(*s);
  const auto toks = iota_tokens(9);
  for (size_t at : {0, 4}) ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(at, 4)).ok());
  // Only the state after 8 is kept: back to 6 means from the start.
  EXPECT_EQ(s->truncate(0, 6), 0);
  EXPECT_TRUE(s->owed().empty());
  ASSERT_TRUE(step(*s, rows, 0, std::span(toks).subspan(0, 5)).ok());  // starts from zeros again
  expect_rows_right(*s, rows, 0);
  ASSERT_TRUE(s->check().ok());
}

// Random operations over a pool with a windowed group and sequences sharing prefixes, against the
// invariants and the rows every table names.
TEST(KvState, RandomOperationsKeepEveryInvariantAndEveryRow) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    const int64_t block = 1 + static_cast<int64_t>(seed % 4);
    // Odd seeds: full attention alone (where cached_prefix is exact); even: with a windowed group.
    const int64_t window = seed % 2 == 1 ? 0 : 3 + static_cast<int64_t>(seed % 5);
    StateSpec spec = paged_spec(40 * block, block, 24, 4, 30 * block, window);
    if (seed % 3 != 0)  // a recurrent group too, with three checkpoints
      spec.groups.push_back({4 + 3 + 1, 1, 1, 0, GroupKind::Recurrent});
    auto s = make(spec);
    Rows rows(*s);
    std::vector<uint64_t> identity(4, 0);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    // Prompts from a small alphabet with common starts, so prefixes are shared often.
    auto prompt = [&] {
      std::vector<int32_t> p(static_cast<size_t>(1 + pick(14)));
      for (size_t i = 0; i < p.size(); ++i) p[i] = i < 6 ? static_cast<int32_t>(pick(2)) : pick(5);
      return p;
    };
    for (int op = 0; op < 1500; ++op) {
      const auto seq = static_cast<int32_t>(pick(4));
      switch (pick(6)) {
        case 0:
        case 1: {  // a step of a few tokens
          std::vector<int32_t> t(static_cast<size_t>(1 + pick(4)));
          for (int32_t& x : t) x = pick(5);
          const int64_t total = s->length(seq) + static_cast<int64_t>(t.size());
          if (total > 24 * block) break;
          if (auto st = step(*s, rows, seq, t, identity[static_cast<size_t>(seq)]); !st) {
            ASSERT_EQ(st.error().code, ErrorCode::CapacityExceeded) << st.error().message;
          }
          break;
        }
        case 2:
          s->truncate(seq, s->length(seq) - pick(5));
          rows.pay(*s);
          break;
        case 3:
          s->release(seq);
          identity[static_cast<size_t>(seq)] = 0;
          if (pick(3) == 0) {
            identity[static_cast<size_t>(seq)] = 7;
            s->set_identity(seq, 7);
          }
          if (pick(2) == 0) {
            const auto p = prompt();
            const int64_t expect =
                s->n_groups() == 1 ? s->cached_prefix(p, identity[static_cast<size_t>(seq)]) : -1;
            const int64_t got = s->match_prefix(seq, p);
            rows.pay(*s);
            if (expect >= 0) {
              EXPECT_EQ(got, expect);
            }
            EXPECT_LT(got, static_cast<int64_t>(p.size()));
          }
          break;
        case 4: {
          const auto dst = static_cast<int32_t>(pick(4));
          if (!s->holds(dst) && dst != seq && s->fork(seq, dst).ok()) {
            rows.pay(*s);
            identity[static_cast<size_t>(dst)] = identity[static_cast<size_t>(seq)];
          }
          break;
        }
        default:
          EXPECT_GE(s->room(seq), 0);
          break;
      }
      const Status st = s->check();
      ASSERT_TRUE(st.ok()) << "seed " << seed << " op " << op << ": " << st.error().message;
      for (int32_t q = 0; q < 4; ++q) {
        expect_rows_right(*s, rows, q, identity[static_cast<size_t>(q)]);
        if (testing::Test::HasFatalFailure()) FAIL() << "seed " << seed << " op " << op;
      }
    }
  }
}

}  // namespace
}  // namespace glass::kv
