#include "kv/state.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace glass::kv {

Result<std::unique_ptr<State>> State::create(const StateSpec& spec) {
  auto bad = [](const std::string& what) { return make_error(ErrorCode::InvalidArgument, "kv: " + what); };
  if (spec.groups.empty()) return bad("no cache group");
  if (spec.n_seq < 1) return bad(fmt::format("n_seq {} must be at least 1", spec.n_seq));
  if (spec.n_batch < 1) return bad(fmt::format("n_batch {} must be at least 1", spec.n_batch));
  for (size_t g = 0; g < spec.groups.size(); ++g) {
    const GroupSpec& gs = spec.groups[g];
    if (gs.block_size < 1 || gs.rows < gs.block_size || gs.rows % gs.block_size != 0 || gs.max_blocks < 1 ||
        gs.window < 0 || gs.rows > INT32_MAX)
      return bad(
          fmt::format("group {}: {} rows in blocks of {} ({} per sequence, window {}) do not make a pool", g,
                      gs.rows, gs.block_size, gs.max_blocks, gs.window));
    if (gs.kind == GroupKind::Recurrent) {
      if (g == 0 || gs.block_size != 1 || gs.window != 0 || gs.rows < int64_t{spec.n_seq} + 1)
        return bad(
            fmt::format("group {}: a recurrent group follows group 0 and holds a slot per sequence "
                        "(block_size 1, at least n_seq + 1 = {} rows), not {} rows in blocks of {}",
                        g, int64_t{spec.n_seq} + 1, gs.rows, gs.block_size));
      continue;
    }
    if ((g == 0) != (gs.window == 0)) return bad("group 0 and only group 0 is the full-attention pool");
  }
  std::unique_ptr<State> s(new State(spec));
  const auto n_seq = static_cast<size_t>(spec.n_seq);
  for (const GroupSpec& gs : spec.groups) {
    Group g;
    g.spec = gs;
    const auto B = static_cast<int32_t>(gs.block_size);
    g.pool = std::make_unique<BlockPool>(static_cast<int32_t>(gs.rows / gs.block_size), B,
                                         spec.salt ^ static_cast<uint64_t>(gs.window));
    if (gs.window > 0 && s->paged() && g.pool->allocate() != kNullBlock)  // lowest first: block 0, for good
      return bad("the sliding-window pool has no null block");
    g.seqs.assign(n_seq, SequenceBlocks(B));
    if (gs.kind == GroupKind::Recurrent) {
      g.rec = std::make_unique<RecurrentSlots>(spec.n_seq, static_cast<int32_t>(gs.rows - spec.n_seq - 1));
      std::vector<int32_t> live(n_seq);
      for (size_t i = 0; i < n_seq; ++i) live[i] = g.rec->live(static_cast<int32_t>(i));
      s->groups_.push_back(std::move(g));
      s->steps_.push_back({std::move(live), {}});
      continue;
    }
    g.seqs[0].reserve_capacity(gs.max_blocks * gs.block_size);  // sequence 0 grows without allocating
    s->groups_.push_back(std::move(g));
    s->steps_.push_back({std::vector<int32_t>(static_cast<size_t>(spec.n_batch), 0),
                         std::vector<int32_t>(n_seq * static_cast<size_t>(gs.max_blocks), -1)});
  }
  s->owed_.reserve(64);
  if (!s->paged()) {
    s->fixed_tokens_.assign(n_seq, {});
    s->fixed_tokens_[0].reserve(static_cast<size_t>(spec.groups[0].max_blocks * spec.groups[0].block_size));
  }
  return s;
}

int32_t State::n_seq_usable() const {
  if (paged()) return spec_.n_seq;
  const GroupSpec& g = spec_.groups[0];
  return static_cast<int32_t>(std::min<int64_t>(spec_.n_seq, g.rows / g.block_size / g.max_blocks));
}

int64_t State::sequence_capacity() const {
  const GroupSpec& g = spec_.groups[0];
  return paged() ? g.rows : g.max_blocks * g.block_size;
}

int64_t State::length(int32_t seq) const {
  const auto i = static_cast<size_t>(seq);
  return paged() ? groups_[0].seqs[i].size() : static_cast<int64_t>(fixed_tokens_[i].size());
}

std::span<const int32_t> State::tokens(int32_t seq) const {
  const auto i = static_cast<size_t>(seq);
  return paged() ? groups_[0].seqs[i].tokens() : std::span<const int32_t>(fixed_tokens_[i]);
}

bool State::holds(int32_t seq) const {
  if (length(seq) > 0) return true;
  for (const Group& g : groups_)
    if (!g.seqs[static_cast<size_t>(seq)].blocks().empty()) return true;
  return false;
}

void State::set_identity(int32_t seq, uint64_t identity) {
  for (Group& g : groups_) g.seqs[static_cast<size_t>(seq)].set_root(identity);
}

int64_t State::room(int32_t seq) const {
  const int64_t len = length(seq);
  if (!paged()) return seq < n_seq_usable() ? sequence_capacity() - len : 0;
  int64_t r = INT64_MAX;
  for (const Group& g : groups_) {
    if (g.recurrent()) continue;
    const SequenceBlocks& sb = g.seqs[static_cast<size_t>(seq)];
    r = std::min(
        r, (int64_t{g.pool->n_free()} + static_cast<int64_t>(sb.blocks().size())) * g.spec.block_size - len);
  }
  return r;
}

Status State::reserve(int32_t seq, int64_t n_total) {
  const GroupSpec& g0 = spec_.groups[0];
  if (n_total > g0.max_blocks * g0.block_size)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("kv: sequence {} cannot hold {} tokens: its table holds {} positions", seq,
                                  n_total, g0.max_blocks * g0.block_size));
  if (!paged()) {
    if (seq < n_seq_usable() && n_total <= sequence_capacity()) return {};
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("kv: sequence {} cannot hold {} tokens in a dense cache", seq, n_total));
  }
  const auto i = static_cast<size_t>(seq);
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].recurrent()) {
      continue;
    } else if (auto st = groups_[g].seqs[i].reserve(*groups_[g].pool, n_total); !st) {
      for (size_t k = 0; k < g; ++k) {  // the groups reserved already give their new blocks back
        SequenceBlocks& sb = groups_[k].seqs[i];
        sb.truncate(*groups_[k].pool, sb.size());
      }
      return st;
    }
  return {};
}

int64_t State::match_prefix(int32_t seq, std::span<const int32_t> toks) {
  if (!paged()) return 0;
  const auto i = static_cast<size_t>(seq);
  int64_t n = groups_[0].seqs[i].match_prefix(*groups_[0].pool, toks);
  if (groups_.size() == 1 || n == 0) return n;
  for (size_t g = 1; g < groups_.size(); ++g) {
    Group& w = groups_[g];
    if (w.windowed()) n = w.seqs[i].match_prefix_windowed(*w.pool, toks, n, w.spec.window, kNullBlock);
  }
  n = truncate_attention(seq, n);
  return has_recurrent() ? resume_recurrent(seq, n) : n;
}

bool State::has_recurrent() const {
  return std::any_of(groups_.begin(), groups_.end(), [](const Group& g) { return g.recurrent(); });
}

int64_t State::checkpointed(int32_t seq, int64_t n) const {
  const SequenceBlocks& sb = groups_[0].seqs[static_cast<size_t>(seq)];
  const int64_t B = sb.block_size();
  for (int64_t k = std::min(n, sb.size()) / B; k > 0; --k) {
    const uint64_t key = sb.hash(static_cast<size_t>(k - 1));
    if (std::all_of(groups_.begin(), groups_.end(),
                    [&](const Group& g) { return !g.recurrent() || g.rec->contains(key); }))
      return k * B;
  }
  return 0;
}

int64_t State::cached_prefix(std::span<const int32_t> toks, uint64_t identity) const {
  // A windowed pool's given-back blocks may be gone from the index, and a recurrent group's
  // checkpoints may stop short, so their match could fall short.
  if (!paged() || groups_.size() > 1) return 0;
  return groups_[0].pool->cached_prefix(toks, identity);
}

Status State::prepare(int32_t seq, int64_t n_new) {
  const auto i = static_cast<size_t>(seq);
  const int64_t len = length(seq), total = len + n_new;
  const GroupSpec& g0 = spec_.groups[0];
  if (total > g0.max_blocks * g0.block_size)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("kv: sequence {} holds {} tokens; {} more exceed its table of {} positions",
                                  seq, len, n_new, g0.max_blocks * g0.block_size));
  if (len == 0)  // a fresh start: the recurrent state from zeros
    for (size_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].recurrent()) {
        const SlotCopy c = groups_[g].rec->reset(seq);
        owed_.push_back({static_cast<int32_t>(g), c.src, c.dst, 1});
      }
  if (!paged()) {
    const GroupSpec& gs = spec_.groups[0];
    const int64_t MB = gs.max_blocks;
    if (seq >= n_seq_usable())
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("session: a dense cache of {} rows holds {} sequences of {} positions; "
                                    "sequence {} does not fit (raise kv_size)",
                                    gs.rows, gs.rows / gs.block_size / MB, MB * gs.block_size, seq));
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].recurrent()) continue;
      int32_t* row = steps_[g].block_tables.data() + i * static_cast<size_t>(MB);
      for (int64_t b = 0; b < MB; ++b) row[b] = static_cast<int32_t>(int64_t{seq} * MB + b);
    }
    return {};
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    Group& gr = groups_[g];
    if (gr.recurrent()) continue;
    SequenceBlocks& sb = gr.seqs[i];
    const int64_t B = gr.spec.block_size;
    if (auto st = sb.reserve(*gr.pool, total); !st)
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("session: the {}KV cache pool ({} blocks of {} rows) has no room for {} "
                                    "more tokens of sequence {}: {}",
                                    gr.spec.window > 0 ? "sliding-window layers' " : "", gr.pool->n_blocks(),
                                    B, n_new, seq, st.error().message));
    pairs_.clear();
    auto shared = sb.prepare_write(*gr.pool, len, pairs_);
    if (!shared) return shared.error();
    for (const auto& [src, dst] : pairs_) owed_.push_back({static_cast<int32_t>(g), src, dst, B});
    const std::span<const int32_t> blocks = sb.blocks();
    int32_t* row = steps_[g].block_tables.data() + i * static_cast<size_t>(gr.spec.max_blocks);
    std::copy(blocks.begin(), blocks.end(), row);
    std::fill(row + blocks.size(), row + gr.spec.max_blocks, -1);
  }
  return {};
}

int32_t State::slot(size_t g, int32_t seq, int64_t pos) const {
  if (groups_[g].recurrent()) return groups_[g].rec->live(seq);
  if (paged()) return groups_[g].seqs[static_cast<size_t>(seq)].row(pos);
  const GroupSpec& gs = spec_.groups[g];
  return static_cast<int32_t>(int64_t{seq} * gs.max_blocks * gs.block_size + pos);
}

void State::commit(int32_t seq, std::span<const int32_t> toks) {
  const auto i = static_cast<size_t>(seq);
  if (!paged()) {
    fixed_tokens_[i].insert(fixed_tokens_[i].end(), toks.begin(), toks.end());
    return;
  }
  for (Group& g : groups_)
    if (!g.recurrent()) g.seqs[i].commit(*g.pool, toks);
}

void State::finish_step(int32_t seq) {
  if (!paged()) return;
  const SequenceBlocks& full = groups_[0].seqs[static_cast<size_t>(seq)];
  const int64_t len = full.size(), B = full.block_size();
  for (size_t g = 1; g < groups_.size(); ++g) {
    Group& gr = groups_[g];
    if (gr.recurrent()) {
      // At a block boundary the live state is the state of the prefix that block's key names.
      if (len > 0 && len % B == 0)
        if (auto c = gr.rec->save(seq, full.hash(static_cast<size_t>(len / B - 1))))
          owed_.push_back({static_cast<int32_t>(g), c->src, c->dst, 1});
      continue;
    }
    // Rows below end - window + 1 are out of every later query's window: their full blocks go back.
    SequenceBlocks& sb = gr.seqs[static_cast<size_t>(seq)];
    sb.release_below(*gr.pool, sb.size() - gr.spec.window + 1, kNullBlock);
  }
}

int64_t State::truncate(int32_t seq, int64_t n) {
  const auto i = static_cast<size_t>(seq);
  n = std::max<int64_t>(n, 0);
  if (!paged()) {
    std::vector<int32_t>& t = fixed_tokens_[i];
    // Without checkpoints a recurrent state goes back to the start only.
    if (has_recurrent() && n < static_cast<int64_t>(t.size())) n = 0;
    t.resize(std::min(t.size(), static_cast<size_t>(n)));
    return static_cast<int64_t>(t.size());
  }
  const int64_t before = length(seq);
  n = truncate_attention(seq, n);
  if (n == before || !has_recurrent()) return n;
  return resume_recurrent(seq, n);
}

int64_t State::resume_recurrent(int32_t seq, int64_t n) {
  const auto i = static_cast<size_t>(seq);
  // The recurrent state resumes from the latest checkpoint at or below n (or from zeros).
  while (true) {
    const int64_t c = checkpointed(seq, n);
    if (c == n) break;
    n = truncate_attention(seq, c);
  }
  if (n > 0) {
    const uint64_t key = groups_[0].seqs[i].hash(static_cast<size_t>(n / groups_[0].spec.block_size - 1));
    for (size_t g = 0; g < groups_.size(); ++g)
      if (groups_[g].recurrent()) {
        const SlotCopy c = groups_[g].rec->restore(seq, key);
        owed_.push_back({static_cast<int32_t>(g), c.src, c.dst, 1});
      }
  }
  return n;
}

int64_t State::truncate_attention(int32_t seq, int64_t n) {
  const auto i = static_cast<size_t>(seq);
  Group& full = groups_[0];
  full.seqs[i].truncate(*full.pool, n);
  n = full.seqs[i].size();
  // Each windowed group keeps what it still holds the window of; the least of them wins.
  while (true) {
    int64_t m = n;
    for (Group& g : groups_)
      if (g.windowed()) m = g.seqs[i].rewind_windowed(*g.pool, m, g.spec.window);
    if (m == n) break;
    n = m;
  }
  full.seqs[i].truncate(*full.pool, n);
  return n;
}

Status State::fork(int32_t src, int32_t dst) {
  if (src == dst || holds(dst))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("kv: fork into sequence {}, which is not empty (or the source)", dst));
  const auto s = static_cast<size_t>(src), d = static_cast<size_t>(dst);
  for (size_t g = 0; g < groups_.size(); ++g)
    if (groups_[g].recurrent())
      owed_.push_back({static_cast<int32_t>(g), groups_[g].rec->live(src), groups_[g].rec->live(dst), 1});
  if (paged()) {
    for (Group& g : groups_)
      if (!g.recurrent()) g.seqs[d].fork(*g.pool, g.seqs[s]);
    return {};
  }
  if (dst >= n_seq_usable())
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("kv: sequence {} has no rows in this dense cache (raise kv_size)", dst));
  const int64_t len = length(src);
  for (size_t g = 0; g < groups_.size(); ++g) {
    const GroupSpec& gs = spec_.groups[g];
    if (groups_[g].recurrent()) continue;
    for (int64_t b = 0; b * gs.block_size < len; ++b)
      owed_.push_back({static_cast<int32_t>(g), static_cast<int32_t>(int64_t{src} * gs.max_blocks + b),
                       static_cast<int32_t>(int64_t{dst} * gs.max_blocks + b), gs.block_size});
  }
  fixed_tokens_[d] = fixed_tokens_[s];
  return {};
}

void State::release(int32_t seq) {
  const auto i = static_cast<size_t>(seq);
  if (!paged()) {
    fixed_tokens_[i].clear();
    return;
  }
  for (Group& g : groups_) g.seqs[i].release(*g.pool);
}

void State::release_all() {
  for (int32_t s = 0; s < spec_.n_seq; ++s) release(s);
}

PoolCounts State::counts(size_t g) const {
  const BlockPool& p = *groups_[g].pool;
  if (paged()) return {p.n_used(), p.n_free(), p.n_cached()};
  int64_t used = 0;
  const int64_t B = spec_.groups[g].block_size;
  for (const auto& t : fixed_tokens_) used += (static_cast<int64_t>(t.size()) + B - 1) / B;
  return {used, p.n_blocks() - used, 0};
}

Status State::check() const {
  auto fail = [](const std::string& what) { return make_error(ErrorCode::Internal, "kv: " + what); };
  for (int32_t s = 0; s < spec_.n_seq; ++s) {
    const std::span<const int32_t> t = tokens(s);
    if (!paged()) {
      if (length(s) > 0 && (s >= n_seq_usable() || length(s) > sequence_capacity()))
        return fail(fmt::format("sequence {} holds {} tokens outside its dense rows", s, length(s)));
      continue;
    }
    for (size_t g = 1; g < groups_.size(); ++g) {
      if (groups_[g].recurrent()) continue;
      const SequenceBlocks& sb = groups_[g].seqs[static_cast<size_t>(s)];
      if (sb.size() != length(s) || !std::equal(t.begin(), t.end(), sb.tokens().begin()))
        return fail(fmt::format("group {}: sequence {} holds other tokens than group 0 ({} against {})", g, s,
                                sb.size(), length(s)));
    }
  }
  if (!paged()) return {};
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Group& gr = groups_[g];
    if (gr.recurrent()) {
      if (auto st = gr.rec->check(); !st) return st;
      continue;
    }
    const BlockPool& p = *gr.pool;
    const int64_t B = gr.spec.block_size, window = gr.spec.window;
    const std::string what = window > 0 ? fmt::format("group {} (window {}): ", g, window) : "";
    if (auto st = p.check(); !st) return fail(what + st.error().message);
    std::vector<int32_t> refs(static_cast<size_t>(p.n_blocks()), 0);
    if (window > 0) refs[kNullBlock] = 1;  // the state's own
    for (size_t s = 0; s < gr.seqs.size(); ++s) {
      const SequenceBlocks& sb = gr.seqs[s];
      if (static_cast<int64_t>(sb.blocks().size()) * B < sb.size())
        return fail(fmt::format("{}sequence {}: {} blocks cannot hold {} tokens", what, s, sb.blocks().size(),
                                sb.size()));
      if (static_cast<int64_t>(sb.blocks().size()) > gr.spec.max_blocks)
        return fail(fmt::format("{}sequence {}: {} blocks, a table holds {}", what, s, sb.blocks().size(),
                                gr.spec.max_blocks));
      // A windowed table holds the blocks its last query's window reaches, never fewer.
      if (window > 0 && sb.first_live() * B > std::max<int64_t>(0, sb.size() - window + 1))
        return fail(fmt::format("{}sequence {} gave back a block its window still sees", what, s));
      for (int32_t b : sb.blocks().subspan(static_cast<size_t>(sb.first_live()))) {
        if (b < 0 || b >= p.n_blocks()) return fail(fmt::format("{}sequence {} names block {}", what, s, b));
        ++refs[static_cast<size_t>(b)];
      }
    }
    for (int32_t b = 0; b < p.n_blocks(); ++b)
      if (refs[static_cast<size_t>(b)] != p.refcount(b))
        return fail(fmt::format("{}block {}: refcount {}, the block tables reference it {} times", what, b,
                                p.refcount(b), refs[static_cast<size_t>(b)]));
  }
  return {};
}

}  // namespace glass::kv
