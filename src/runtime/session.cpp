// Session: eval() binds T and S and runs the prefill plan (several tokens) or the decode plan
// (one token); nothing in that loop allocates or re-reads the prefix.
#include <fmt/format.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/exception_guard.h"
#include "runtime/session_impl.h"

namespace glass {

Status Session::Impl::bind(BoundPlan& bp, int64_t max_t) {
  if (bp.plan) return {};
  auto plan = capture_graph ? m->plan(max_t, *capture_graph, capture_hash) : m->plan(max_t);
  if (!plan) return plan.error();
  bp.plan = *plan;
  bp.workspace = bp.plan->make_workspace();
  const graph::Graph& g = bp.plan->compiled_graph();
  std::map<std::string, void*> inputs{
      {"tokens", tokens.data()},         {"positions", positions.data()},
      {"seq_ids", seq_ids.data()},       {"output_rows", output_rows.data()},
      {"slots", groups[0].slots.data()}, {"block_tables", groups[0].block_tables.data()}};
  if (groups.size() > 1) {
    inputs.emplace("window_slots", groups[1].slots.data());
    inputs.emplace("window_block_tables", groups[1].block_tables.data());
  }
  for (graph::NodeId id : g.leaves(graph::Op::Input)) {
    const auto it = inputs.find(g.node(id).name);
    if (it == inputs.end())
      return make_error(ErrorCode::Internal,
                        fmt::format("session: the graph asks for unknown input '{}'", g.node(id).name));
    bp.args.inputs.push_back(it->second);
  }
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const auto it = state_index.find(g.node(id).name);
    if (it == state_index.end())
      return make_error(ErrorCode::Internal, fmt::format("session: unknown state '{}'", g.node(id).name));
    bp.args.states.push_back(states[it->second]);
    bp.kinds.push_back(m->model_graph.state_kinds[it->second]);
  }
  bp.args.outputs = {last.data()};  // replaced per run by where the caller wants the logits
  for (std::vector<float>& rows : capture_step) bp.args.outputs.push_back(rows.data());
  bp.stats.state_rows_written.assign(bp.args.states.size(), 0);
  return {};
}

int64_t Session::Impl::length(int32_t seq) const {
  const auto i = static_cast<size_t>(seq);
  return storage == KvStorage::Dense ? dense_len[i] : groups[0].seqs[i].size();
}

int64_t Session::Impl::room(int32_t seq, int64_t n_cached) const {
  int64_t r = INT64_MAX;
  for (const KvGroup& g : groups) {
    const runtime::SequenceBlocks& sb = g.seqs[static_cast<size_t>(seq)];
    r = std::min(r,
                 (int64_t{g.pool->n_free()} + static_cast<int64_t>(sb.blocks().size())) * g.cache.block_size -
                     n_cached);
  }
  return r;
}

Status Session::Impl::reserve(int32_t seq, int64_t n_total) {
  for (KvGroup& g : groups)
    if (auto st = g.seqs[static_cast<size_t>(seq)].reserve(*g.pool, n_total); !st) return st;
  return {};
}

int64_t Session::Impl::match_prefix(int32_t seq, std::span<const int32_t> toks) {
  const auto i = static_cast<size_t>(seq);
  int64_t n = groups[0].seqs[i].match_prefix(*groups[0].pool, toks);
  if (groups.size() > 1 && n > 0) {
    KvGroup& w = groups[1];
    n = w.seqs[i].match_prefix_windowed(*w.pool, toks, n, w.window, KvGroup::kNullBlock);
    groups[0].seqs[i].truncate(*groups[0].pool, n);
  }
  return n;
}

void Session::Impl::release(int32_t seq) {
  const auto i = static_cast<size_t>(seq);
  if (storage == KvStorage::Dense) {
    dense_len[i] = 0;
    return;
  }
  for (KvGroup& g : groups) g.seqs[i].release(*g.pool);
}

void Session::Impl::release_all() {
  for (int64_t s = 0; s < cache.n_seq; ++s) release(static_cast<int32_t>(s));
}

int64_t Session::Impl::truncate(int32_t seq, int64_t n) {
  const auto i = static_cast<size_t>(seq);
  if (storage == KvStorage::Dense) return dense_len[i] = std::min(dense_len[i], n);
  groups[0].seqs[i].truncate(*groups[0].pool, n);
  n = groups[0].seqs[i].size();
  if (groups.size() > 1) {
    KvGroup& w = groups[1];
    n = w.seqs[i].rewind_windowed(*w.pool, n, w.window);
    groups[0].seqs[i].truncate(*groups[0].pool, n);
  }
  return n;
}

void Session::Impl::copy_rows(const KvGroup& g, int32_t src, int32_t dst, int64_t n) {
  const auto B = static_cast<size_t>(g.cache.block_size);
  for (size_t k : g.states) {
    auto* base = static_cast<std::byte*>(states[k]);
    const size_t rb = state_row_bytes[k];
    std::memcpy(base + static_cast<size_t>(dst) * B * rb, base + static_cast<size_t>(src) * B * rb,
                static_cast<size_t>(n) * rb);
  }
}

Status Session::Impl::run_chunk(std::span<const int32_t> chunk, std::span<const int32_t> seq_of,
                                size_t first_index, LogitRows rows, float* out, int64_t* n_out) {
  const auto n = static_cast<int64_t>(chunk.size());
  const int64_t B = cache.block_size, MB = cache.max_blocks;
  BoundPlan& bp = n == 1 ? decode : prefill;
  if (auto st = bind(bp, n == 1 ? 1 : m->info.n_batch); !st) return st;
  // Each sequence's new rows: blocks reserved (paged) or the run checked (dense) before any write.
  for (int32_t s : seq_of) chunk_new[static_cast<size_t>(s)] = 0;
  for (int32_t s : seq_of) ++chunk_new[static_cast<size_t>(s)];
  for (int32_t s : seq_of) next_pos[static_cast<size_t>(s)] = -1;  // -1: not prepared yet
  int64_t S = 0;
  for (int32_t s : seq_of) {
    const auto i = static_cast<size_t>(s);
    if (next_pos[i] >= 0) continue;  // prepared already (an earlier token of the chunk)
    const int64_t len = length(s), total = len + chunk_new[i];
    if (total > m->info.n_ctx)
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("session: sequence {} holds {} tokens; {} more exceed the context of {}",
                                    s, len, chunk_new[i], m->info.n_ctx));
    if (storage == KvStorage::Dense) {
      if ((int64_t{s} + 1) * MB > cache.n_blocks())
        return make_error(ErrorCode::CapacityExceeded,
                          fmt::format("session: a dense cache of {} rows holds {} sequences of {} positions; "
                                      "sequence {} does not fit (raise kv_size)",
                                      cache.rows, cache.n_blocks() / MB, MB * B, s));
      for (KvGroup& g : groups) {
        int32_t* row = g.block_tables.data() + i * static_cast<size_t>(MB);
        for (int64_t b = 0; b < MB; ++b) row[b] = static_cast<int32_t>(int64_t{s} * MB + b);
      }
    } else {
      for (KvGroup& g : groups) {
        runtime::SequenceBlocks& sb = g.seqs[i];
        if (auto st = sb.reserve(*g.pool, total); !st)
          return make_error(
              ErrorCode::CapacityExceeded,
              fmt::format("session: the {}KV cache pool ({} blocks of {} rows) has no room for {} "
                          "more tokens of sequence {}: {}",
                          g.window > 0 ? "sliding-window layers' " : "", g.pool->n_blocks(), B, chunk_new[i],
                          s, st.error().message));
        copies.clear();
        auto shared = sb.prepare_write(*g.pool, len, copies);
        if (!shared) return shared.error();
        for (const auto& [src, dst] : copies) copy_rows(g, src, dst, B);
        const std::span<const int32_t> blocks = sb.blocks();
        int32_t* row = g.block_tables.data() + i * static_cast<size_t>(MB);
        std::copy(blocks.begin(), blocks.end(), row);
        std::fill(row + blocks.size(), row + MB, -1);
      }
    }
    S = std::max(S, total);
    next_pos[i] = len;
  }
  for (size_t i = 0; i < chunk.size(); ++i) {
    const auto s = static_cast<size_t>(seq_of[i]);
    const int64_t pos = next_pos[s]++;
    tokens[i] = chunk[i];
    seq_ids[i] = seq_of[i];
    positions[i] = static_cast<int32_t>(pos);
    for (KvGroup& g : groups)
      g.slots[i] = storage == KvStorage::Dense ? static_cast<int32_t>(int64_t{seq_of[i]} * MB * B + pos)
                                               : g.seqs[s].row(pos);
  }
  int64_t o = 0;
  for (size_t i = 0; i < chunk.size(); ++i)
    if (rows == LogitRows::All ||
        last_index[static_cast<size_t>(seq_of[i])] == static_cast<int64_t>(first_index + i))
      output_rows[static_cast<size_t>(o++)] = static_cast<int32_t>(i);
  bp.args.bind[graph::Sym::T] = n;
  bp.args.bind[graph::Sym::S] = S;
  bp.args.bind[graph::Sym::O] = std::max<int64_t>(o, 1);
  if (o == 0) output_rows[0] = static_cast<int32_t>(n - 1);  // the plan computes one row; kept in `last`
  bp.args.outputs[0] = o == 0 ? last.data() : out;
  uint64_t before = 0, after = 0;
  for (uint64_t r : bp.stats.state_rows_written) before += r;
  if (auto st = bp.plan->run(bp.args, *bp.workspace, bp.stats); !st) return st;
  for (uint64_t r : bp.stats.state_rows_written) after += r;
  stats.kv_rows_written += after - before;
  if (!captured.empty()) keep_captures(bp.args.bind, o);
  for (size_t i = 0; i < chunk.size(); ++i) {
    const auto s = static_cast<size_t>(seq_of[i]);
    if (storage == KvStorage::Dense)
      ++dense_len[s];
    else
      for (KvGroup& g : groups) g.seqs[s].commit(*g.pool, chunk.subspan(i, 1));
  }
  // Rows below end - window + 1 are out of every later query's window: their full blocks go back.
  if (storage == KvStorage::Paged && groups.size() > 1) {
    KvGroup& w = groups[1];
    for (int32_t s : seq_of) {
      runtime::SequenceBlocks& sb = w.seqs[static_cast<size_t>(s)];
      sb.release_below(*w.pool, sb.size() - w.window + 1, KvGroup::kNullBlock);
    }
  }
  *n_out = o;
  stats.n_eval_calls++;
  stats.n_tokens_evaluated += static_cast<uint64_t>(n);
  return {};
}

Status Session::Impl::eval_tokens(std::span<const int32_t> toks, std::span<const int32_t> seq_of,
                                  LogitRows rows, std::span<float> out) {
  const auto n = static_cast<int64_t>(toks.size());
  const int64_t vocab = m->info.vocab_size;
  if (n == 0) return make_error(ErrorCode::InvalidArgument, "session: eval needs at least one token");
  if (seq_of.size() != toks.size())
    return make_error(ErrorCode::InvalidArgument, "session: one sequence id per token");
  for (size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] < 0 || toks[i] >= vocab)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: token id {} outside the vocabulary [0, {})", toks[i], vocab));
    if (seq_of[i] < 0 || seq_of[i] >= cache.n_seq)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: sequence id {} outside [0, {})", seq_of[i], cache.n_seq));
  }
  int64_t want = n;
  if (rows == LogitRows::LastOfEachSequence) {
    for (int32_t s : seq_of) last_index[static_cast<size_t>(s)] = -1;
    want = 0;
    for (size_t i = 0; i < toks.size(); ++i) {
      auto& li = last_index[static_cast<size_t>(seq_of[i])];
      want += li < 0 ? 1 : 0;
      li = static_cast<int64_t>(i);
    }
  }
  if (static_cast<int64_t>(out.size()) != want * vocab)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("session: logits buffer holds {} floats, {} rows need {}", out.size(), want,
                                  want * vocab));
  begin_captures();
  int64_t written = 0;
  for (int64_t done = 0; done < n;) {
    const int64_t c = std::min(n - done, m->info.n_batch);
    const auto at = static_cast<size_t>(done), len = static_cast<size_t>(c);
    int64_t got = 0;
    if (auto st = run_chunk(toks.subspan(at, len), seq_of.subspan(at, len), at, rows,
                            out.data() + static_cast<size_t>(written * vocab), &got);
        !st)
      return st;
    written += got;
    done += c;
  }
  return {};
}

StateMemory::~StateMemory() {
  if (map_ == nullptr) return;
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(map_, map_bytes_);  // the addresses may be mapped again
#endif
  ::munmap(map_, map_bytes_);
}

// Under AddressSanitizer a poisoned 64-byte gap follows each tensor, so that a kernel writing past
// one state is caught as it would be between separate allocations.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStateGap = 64;
#else
constexpr size_t kStateGap = 0;
#endif

bool StateMemory::allocate(const std::vector<size_t>& bytes) {
  constexpr size_t kHuge = size_t{2} << 20, kAlign = 64;
  auto padded = [](size_t b) { return (b + kAlign - 1) / kAlign * kAlign; };
  size_t total = 0;
  for (size_t b : bytes) total += padded(b) + kStateGap;
  map_bytes_ = std::max(total, kAlign) + kHuge;
  map_ = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    return false;
  }
  const auto p = reinterpret_cast<uintptr_t>(map_);
  auto* base = static_cast<std::byte*>(map_) + (kHuge - p % kHuge) % kHuge;
  // No MADV_HUGEPAGE here: with THP's default defrag ("madvise") the first write into each 2 MiB of
  // the cache compacts memory synchronously, which cost the first prompt step 1.0-1.2 s on a 4096-row
  // SmolLM2 cache (170 ms without it), while decode at 4096 keys measured the same either way.
  size_t at = 0;
  for (size_t b : bytes) {
    at_.push_back(base + at);
#if defined(__SANITIZE_ADDRESS__)
    ASAN_POISON_MEMORY_REGION(base + at + b, padded(b) - b + kStateGap);
#endif
    at += padded(b) + kStateGap;
  }
  return true;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

// The KV cache's size follows the options and the model: its allocation failing is an error, not an
// exception out of the API (core/exception_guard.h).
Result<std::unique_ptr<Session>> Model::new_session() const try {
  auto s = std::make_unique<Session::Impl>();
  s->model = shared_from_this();
  s->m = impl_.get();
  const models::ModelGraph& mg = impl_->model_graph;
  s->cache = mg.cache;
  s->storage = impl_->options.kv_storage;
  s->groups.resize(mg.window > 0 ? 2 : 1);
  s->groups[0].cache = mg.cache;
  if (mg.window > 0) {
    s->groups[1].cache = mg.window_cache;
    s->groups[1].window = mg.window;
  }
  const graph::Graph& g = mg.graph;
  std::vector<size_t> state_bytes;
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const graph::Node& n = g.node(id);
    const size_t k = state_bytes.size();
    KvGroup& group = s->groups[mg.state_windowed[k] ? 1 : 0];
    s->state_index.emplace(n.name, k);
    group.states.push_back(k);
    state_bytes.push_back(
        *graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, {}).numel())));
    s->state_row_bytes.push_back(state_bytes.back() / static_cast<size_t>(group.cache.rows));
  }
  if (!s->states.allocate(state_bytes))
    return make_error(ErrorCode::Internal, "session: no memory for the model's state (KV cache)");
  const auto batch = static_cast<size_t>(impl_->info.n_batch);
  const auto n_seq = static_cast<size_t>(s->cache.n_seq);
  for (auto* v : {&s->tokens, &s->positions, &s->seq_ids, &s->output_rows}) v->assign(batch, 0);
  s->last.assign(static_cast<size_t>(impl_->info.vocab_size), 0.0f);
  // The prefix cache's salt: what else decides a block's contents beside its tokens.
  const uint64_t salt =
      impl_->graph_hash ^ (impl_->options.cache_type == CacheType::F16 ? 0x9e3779b97f4a7c15ull : 0);
  for (KvGroup& group : s->groups) {
    const auto B = static_cast<int32_t>(group.cache.block_size);
    group.slots.assign(batch, 0);
    group.block_tables.assign(n_seq * static_cast<size_t>(group.cache.max_blocks), -1);
    group.pool = std::make_unique<runtime::BlockPool>(static_cast<int32_t>(group.cache.n_blocks()), B,
                                                      salt ^ static_cast<uint64_t>(group.window));
    if (group.window > 0 && s->storage == KvStorage::Paged) {
      const int32_t null_block = group.pool->allocate();  // lowest first: block 0, held for good
      if (null_block != KvGroup::kNullBlock)
        return make_error(ErrorCode::Internal, "session: the sliding-window pool has no null block");
    }
    group.seqs.assign(n_seq, runtime::SequenceBlocks(B));
    group.seqs[0].reserve_capacity(impl_->info.n_ctx);  // a session's own sequence grows without allocating
  }
  s->dense_len.assign(n_seq, 0);
  s->chunk_new.assign(n_seq, 0);
  s->next_pos.assign(n_seq, 0);
  s->last_index.assign(n_seq, -1);
  s->history.reserve(static_cast<size_t>(impl_->info.n_ctx));  // the token loop never allocates
  return std::make_unique<Session>(std::move(s));
} catch (...) {
  return error_from_exception("session", std::current_exception());
}

// No exception leaves the public API (core/exception_guard.h).
Status Session::eval(std::span<const int32_t> tokens, std::span<float> all_logits) try {
  Impl& s = *impl_;
  if (tokens.size() > s.chunk_seq0.size()) s.chunk_seq0.assign(tokens.size(), 0);
  const std::span<const int32_t> seq0(s.chunk_seq0.data(), tokens.size());
  Status st = all_logits.empty() ? s.eval_tokens(tokens, seq0, LogitRows::LastOfEachSequence, s.last)
                                 : s.eval_tokens(tokens, seq0, LogitRows::All, all_logits);
  if (!st) return st;
  if (!all_logits.empty()) {
    const auto vocab = s.last.size();
    std::copy_n(all_logits.end() - static_cast<ptrdiff_t>(vocab), vocab, s.last.begin());
  }
  s.history.insert(s.history.end(), tokens.begin(), tokens.end());
  return st;
} catch (...) {
  return error_from_exception("eval", std::current_exception());
}

std::span<const int32_t> Session::tokens() const { return impl_->history; }

Status Session::eval_batch(std::span<const int32_t> tokens, std::span<const int32_t> seq_ids, bool all_logits,
                           std::span<float> logits) {
  Impl& s = *impl_;
  auto st =
      s.eval_tokens(tokens, seq_ids, all_logits ? LogitRows::All : LogitRows::LastOfEachSequence, logits);
  if (!st) return st;
  for (size_t i = 0; i < tokens.size(); ++i)
    if (seq_ids[i] == 0) s.history.push_back(tokens[i]);
  return st;
}

int64_t Session::sequence_length(int32_t seq_id) const {
  return seq_id >= 0 && seq_id < impl_->cache.n_seq ? impl_->length(seq_id) : 0;
}

void Session::release_sequence(int32_t seq_id) {
  if (seq_id < 0 || seq_id >= impl_->cache.n_seq) return;
  impl_->release(seq_id);
  if (seq_id == 0) impl_->history.clear();
}

Status Session::truncate(int64_t n) {
  Impl& s = *impl_;
  if (n < 0 || n > static_cast<int64_t>(s.history.size()) ||
      s.length(0) != static_cast<int64_t>(s.history.size()))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("session: cannot keep {} of {} cached tokens", n, s.history.size()));
  s.history.resize(static_cast<size_t>(n));
  // The sliding-window pool may have given back the rows before n that a query at n still sees:
  // they are evaluated again.
  const int64_t kept = s.truncate(0, n);
  if (kept == n) return {};
  const std::span<const int32_t> again(s.history.data() + kept, static_cast<size_t>(n - kept));
  if (again.size() > s.chunk_seq0.size()) s.chunk_seq0.assign(again.size(), 0);
  return s.eval_tokens(again, std::span<const int32_t>(s.chunk_seq0.data(), again.size()),
                       LogitRows::LastOfEachSequence, s.last);
}

std::span<const float> Session::last_logits() const { return impl_->last; }
int64_t Session::n_past() const { return impl_->length(0); }
void Session::reset() {
  impl_->release_all();
  impl_->history.clear();
}
const SessionStats& Session::stats() const { return impl_->stats; }

void Session::set_profiling(bool on) {
  for (BoundPlan* bp : {&impl_->prefill, &impl_->decode}) bp->stats.profile = on ? &impl_->profile : nullptr;
}

void Session::clear_profile() { impl_->profile.clear(); }

std::vector<KernelTime> Session::profile() const {
  std::vector<KernelTime> out;
  for (const auto& [kernel, t] : impl_->profile)
    out.push_back({kernel, t.calls, static_cast<double>(t.ns) * 1e-9, t.weight_bytes});
  std::stable_sort(out.begin(), out.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.seconds > b.seconds; });
  return out;
}
const Model& Session::model() const { return *impl_->model; }

}  // namespace glass
