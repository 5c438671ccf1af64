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
  auto plan = capture_graph ? m->plan(max_t, *capture_graph, capture_hash, batch_invariant)
                            : m->plan(max_t, shape->mg.graph, shape->hash, batch_invariant);
  if (!plan) return plan.error();
  bp.plan = *plan;
  bp.workspace = bp.plan->make_workspace();
  const graph::Graph& g = bp.plan->compiled_graph();
  std::map<std::string, void*> inputs{
      {"tokens", tokens.data()},           {"positions", positions.data()},
      {"seq_ids", seq_ids.data()},         {"output_rows", output_rows.data()},
      {"slots", kv->step(0).slots.data()}, {"block_tables", kv->step(0).block_tables.data()}};
  if (const int w = kv::windowed_group(kv->spec()); w >= 0) {
    inputs.emplace("window_slots", kv->step(static_cast<size_t>(w)).slots.data());
    inputs.emplace("window_block_tables", kv->step(static_cast<size_t>(w)).block_tables.data());
  }
  if (const int r = kv::recurrent_group(kv->spec()); r >= 0)
    inputs.emplace("recurrent_slots", kv->step(static_cast<size_t>(r)).slots.data());
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
    bp.kinds.push_back(shape->mg.state_kinds[it->second]);
  }
  for (graph::Sym sym : {graph::Sym::C, graph::Sym::W, graph::Sym::N, graph::Sym::M, graph::Sym::R})
    bp.args.bind[sym] = sizes[sym];
  bp.args.outputs = {last.data()};  // replaced per run by where the caller wants the logits
  for (std::vector<float>& rows : capture_step) bp.args.outputs.push_back(rows.data());
  bp.stats.state_rows_written.assign(bp.args.states.size(), 0);
  return {};
}

void Session::Impl::pay_copies() {
  for (const kv::RowCopy& c : kv->owed()) {
    const auto B = static_cast<size_t>(kv->spec().groups[static_cast<size_t>(c.group)].block_size);
    for (size_t k : group_states[static_cast<size_t>(c.group)]) {
      auto* base = static_cast<std::byte*>(states[k]);
      const size_t rb = state_row_bytes[k];
      std::memcpy(base + static_cast<size_t>(c.dst) * B * rb, base + static_cast<size_t>(c.src) * B * rb,
                  static_cast<size_t>(c.rows) * rb);
    }
  }
  kv->paid();
}

Status Session::Impl::run_chunk(std::span<const int32_t> chunk, std::span<const int32_t> seq_of,
                                size_t first_index, LogitRows rows, float* out, int64_t* n_out) {
  const auto n = static_cast<int64_t>(chunk.size());
  BoundPlan& bp = n == 1 ? decode : prefill;
  if (auto st = bind(bp, n == 1 ? 1 : m->info.n_batch); !st) return st;
  // Each sequence's new rows: blocks reserved, shared ones copied, before any write.
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
    if (auto st = kv->prepare(s, chunk_new[i]); !st) return st;  // what it owes is paid at the next step
    S = std::max(S, total);
    next_pos[i] = len;
  }
  pay_copies();  // copy-on-write, checkpoints, restores: before the plan writes anything
  for (size_t i = 0; i < chunk.size(); ++i) {
    const auto s = static_cast<size_t>(seq_of[i]);
    const int64_t pos = next_pos[s]++;
    tokens[i] = chunk[i];
    seq_ids[i] = seq_of[i];
    positions[i] = static_cast<int32_t>(pos);
    for (size_t g = 0; g < kv->n_groups(); ++g)  // recurrent groups' slots are per sequence, not per token
      if (kv->spec().groups[g].kind == kv::GroupKind::Attention)
        kv->step(g).slots[i] = kv->slot(g, seq_of[i], pos);
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
  for (size_t i = 0; i < chunk.size(); ++i) kv->commit(seq_of[i], chunk.subspan(i, 1));
  for (int32_t s : seq_of) kv->finish_step(s);
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
    if (seq_of[i] < 0 || seq_of[i] >= kv->n_seq())
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: sequence id {} outside [0, {})", seq_of[i], kv->n_seq()));
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
Result<std::unique_ptr<Session>> Model::new_session(const SessionOptions& options) const try {
  auto s = std::make_unique<Session::Impl>();
  s->model = shared_from_this();
  s->m = impl_.get();
  auto resolved = impl_->resolve(options);
  if (!resolved) return resolved.error();
  auto shape = impl_->graph_for(resolved->build);
  if (!shape) return shape.error();
  s->shape = std::move(*shape);
  s->batch_invariant = options.batch_invariant.value_or(impl_->options.batch_invariant);
  const models::ModelGraph& mg = s->shape->mg;
  // The sequence state: the full-attention pool, and the sliding-window layers' when the model has
  // them, sized here (kv/sizing.h); the graph names their sizes as symbols bound per step.
  kv::StateSpec spec = kv::size_pools(resolved->pools);
  spec.n_batch = impl_->info.n_batch;
  // The prefix cache's salt: what else decides a block's contents beside its tokens (the graph hash
  // covers the cache type and block size).
  spec.salt = s->shape->hash ^ (resolved->build.kv_dtype == graph::DType::F16 ? 0x9e3779b97f4a7c15ull : 0);
  auto state = kv::State::create(spec);
  if (!state) return state.error();
  s->kv = std::move(*state);
  s->sizes[graph::Sym::C] = spec.groups[0].rows;
  const int windowed = kv::windowed_group(spec), recurrent = kv::recurrent_group(spec);
  s->sizes[graph::Sym::W] = windowed >= 0 ? spec.groups[static_cast<size_t>(windowed)].rows : 0;
  s->sizes[graph::Sym::R] = recurrent >= 0 ? spec.groups[static_cast<size_t>(recurrent)].rows : 0;
  s->sizes[graph::Sym::N] = spec.n_seq;
  s->sizes[graph::Sym::M] = spec.groups[0].max_blocks;
  s->group_states.resize(spec.groups.size());
  const graph::Graph& g = mg.graph;
  std::vector<size_t> state_bytes;
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const graph::Node& n = g.node(id);
    const size_t k = state_bytes.size();
    const int in_group = mg.state_recurrent[k] ? recurrent : mg.state_windowed[k] ? windowed : 0;
    if (in_group < 0)
      return make_error(ErrorCode::Internal,
                        fmt::format("session: no pool for the model's state '{}'", n.name));
    const auto group = static_cast<size_t>(in_group);
    s->state_index.emplace(n.name, k);
    s->group_states[group].push_back(k);
    state_bytes.push_back(
        *graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, s->sizes).numel())));
    s->state_row_bytes.push_back(state_bytes.back() / static_cast<size_t>(spec.groups[group].rows));
  }
  if (!s->states.allocate(state_bytes))
    return make_error(ErrorCode::Internal, "session: no memory for the model's state (KV cache)");
  const auto batch = static_cast<size_t>(impl_->info.n_batch);
  const auto n_seq = static_cast<size_t>(spec.n_seq);
  for (auto* v : {&s->tokens, &s->positions, &s->seq_ids, &s->output_rows}) v->assign(batch, 0);
  s->last.assign(static_cast<size_t>(impl_->info.vocab_size), 0.0f);
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
  return seq_id >= 0 && seq_id < impl_->kv->n_seq() ? impl_->length(seq_id) : 0;
}

void Session::release_sequence(int32_t seq_id) {
  if (seq_id < 0 || seq_id >= impl_->kv->n_seq()) return;
  impl_->kv->release(seq_id);
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
  const int64_t kept = s.kv->truncate(0, n);
  if (kept == n) return {};
  const std::span<const int32_t> again(s.history.data() + kept, static_cast<size_t>(n - kept));
  if (again.size() > s.chunk_seq0.size()) s.chunk_seq0.assign(again.size(), 0);
  return s.eval_tokens(again, std::span<const int32_t>(s.chunk_seq0.data(), again.size()),
                       LogitRows::LastOfEachSequence, s.last);
}

std::span<const float> Session::last_logits() const { return impl_->last; }
int64_t Session::n_past() const { return impl_->length(0); }
void Session::reset() {
  impl_->kv->release_all();
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
