// Session: eval() binds T and S and runs the prefill plan (several tokens) or the decode plan
// (one token); nothing in that loop allocates or re-reads the prefix.
#include <fmt/format.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include <algorithm>
#include <cstring>

#include "runtime/session_impl.h"

namespace glass {

Status Session::Impl::bind(BoundPlan& bp, int64_t max_t) {
  if (bp.plan) return {};
  auto plan = m->plan(max_t);
  if (!plan) return plan.error();
  bp.plan = *plan;
  bp.workspace = bp.plan->make_workspace();
  const graph::Graph& g = bp.plan->compiled_graph();
  const std::map<std::string, void*> inputs{{"tokens", tokens.data()},
                                            {"positions", positions.data()},
                                            {"seq_ids", seq_ids.data()},
                                            {"slots", slots.data()},
                                            {"output_rows", output_rows.data()}};
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
  bp.args.outputs = {logits.data()};
  bp.stats.state_rows_written.assign(bp.args.states.size(), 0);
  return {};
}

int64_t Session::Impl::position(int32_t seq) const {
  return static_cast<size_t>(seq) < seq_pos.size() ? seq_pos[static_cast<size_t>(seq)] : 0;
}

Status Session::Impl::run_chunk(std::span<const int32_t> chunk, std::span<const int32_t> seqs,
                                std::span<float> out) {
  const auto n = static_cast<int64_t>(chunk.size());
  BoundPlan& bp = n == 1 ? decode : prefill;
  if (auto st = bind(bp, n == 1 ? 1 : m->info.n_batch); !st) return st;
  for (size_t i = 0; i < chunk.size(); ++i) {
    const auto seq = static_cast<size_t>(seqs[i]);
    if (seq >= seq_pos.size()) seq_pos.resize(seq + 1, 0);  // a new sequence: once, not per token
    tokens[i] = chunk[i];
    seq_ids[i] = seqs[i];
    positions[i] = static_cast<int32_t>(seq_pos[seq]++);
    slots[i] = static_cast<int32_t>(n_rows + static_cast<int64_t>(i));
  }
  // Logits of every token when the caller takes them, else of the last one only.
  const int64_t n_out = out.empty() ? 1 : n;
  for (int64_t r = 0; r < n_out; ++r)
    output_rows[static_cast<size_t>(r)] = static_cast<int32_t>(n - n_out + r);
  bp.args.bind[graph::Sym::T] = n;
  bp.args.bind[graph::Sym::S] = n_rows + n;
  bp.args.bind[graph::Sym::O] = n_out;
  uint64_t before = 0, after = 0;
  for (size_t k = 0; k < bp.kinds.size(); ++k)
    if (bp.kinds[k] != models::StateKind::RowMeta) before += bp.stats.state_rows_written[k];
  if (auto st = bp.plan->run(bp.args, *bp.workspace, bp.stats); !st) return st;
  for (size_t k = 0; k < bp.kinds.size(); ++k)
    if (bp.kinds[k] != models::StateKind::RowMeta) after += bp.stats.state_rows_written[k];
  stats.kv_rows_written += after - before;
  const auto vocab = static_cast<size_t>(m->info.vocab_size);
  if (!out.empty()) std::copy_n(logits.begin(), static_cast<size_t>(n) * vocab, out.begin());
  std::copy_n(logits.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(n_out - 1) * vocab), vocab,
              last.begin());
  n_rows += n;
  stats.n_eval_calls++;
  stats.n_tokens_evaluated += static_cast<uint64_t>(n);
  return {};
}

Status Session::Impl::eval_tokens(std::span<const int32_t> toks, std::span<const int32_t> seqs,
                                  std::span<float> out) {
  const auto n = static_cast<int64_t>(toks.size());
  const int64_t vocab = m->info.vocab_size;
  if (n == 0) return make_error(ErrorCode::InvalidArgument, "session: eval needs at least one token");
  if (seqs.size() != toks.size())
    return make_error(ErrorCode::InvalidArgument, "session: one sequence id per token");
  if (!out.empty() && static_cast<int64_t>(out.size()) != n * vocab)
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("session: logits buffer holds {} floats, {} tokens need {}", out.size(), n, n * vocab));
  if (n_rows + n > m->info.n_ctx)
    return make_error(
        ErrorCode::CapacityExceeded,
        fmt::format("session: {} cached + {} new tokens exceed the context of {}", n_rows, n, m->info.n_ctx));
  for (size_t i = 0; i < toks.size(); ++i) {
    if (toks[i] < 0 || toks[i] >= vocab)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: token id {} outside the vocabulary [0, {})", toks[i], vocab));
    if (seqs[i] < 0 || seqs[i] >= m->info.n_batch)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: sequence id {} outside [0, {})", seqs[i], m->info.n_batch));
  }
  for (int64_t done = 0; done < n;) {
    const int64_t c = std::min(n - done, m->info.n_batch);
    const auto at = static_cast<size_t>(done), len = static_cast<size_t>(c);
    auto chunk_out = out.empty()
                         ? std::span<float>{}
                         : out.subspan(at * static_cast<size_t>(vocab), len * static_cast<size_t>(vocab));
    if (auto st = run_chunk(toks.subspan(at, len), seqs.subspan(at, len), chunk_out); !st) return st;
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
  ::madvise(base, total, MADV_HUGEPAGE);  // advice only: without THP it is 4 KiB pages
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

Result<std::unique_ptr<Session>> Model::new_session() const {
  auto s = std::make_unique<Session::Impl>();
  s->model = shared_from_this();
  s->m = impl_.get();
  const graph::Graph& g = impl_->model_graph.graph;
  std::vector<size_t> state_bytes;
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const graph::Node& n = g.node(id);
    s->state_index.emplace(n.name, state_bytes.size());
    state_bytes.push_back(
        *graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, {}).numel())));
  }
  if (!s->states.allocate(state_bytes))
    return make_error(ErrorCode::Internal, "session: no memory for the model's state (KV cache)");
  const auto batch = static_cast<size_t>(impl_->info.n_batch);
  for (auto* v : {&s->tokens, &s->positions, &s->seq_ids, &s->slots, &s->output_rows}) v->assign(batch, 0);
  s->logits.assign(batch * static_cast<size_t>(impl_->info.vocab_size), 0.0f);
  s->last.assign(static_cast<size_t>(impl_->info.vocab_size), 0.0f);
  s->seq_pos.assign(1, 0);
  s->zeros.assign(batch, 0);
  s->history.reserve(static_cast<size_t>(impl_->info.n_ctx));  // the token loop never allocates
  return std::make_unique<Session>(std::move(s));
}

Status Session::eval(std::span<const int32_t> tokens, std::span<float> all_logits) {
  // One sequence (id 0): a span of zeros as long as the longest eval the session allows.
  if (tokens.size() > impl_->zeros.size()) impl_->zeros.assign(tokens.size(), 0);
  auto st =
      impl_->eval_tokens(tokens, std::span<const int32_t>(impl_->zeros.data(), tokens.size()), all_logits);
  if (st) impl_->history.insert(impl_->history.end(), tokens.begin(), tokens.end());
  return st;
}

std::span<const int32_t> Session::tokens() const { return impl_->history; }

Status Session::truncate(int64_t n) {
  Impl& s = *impl_;
  if (n < 0 || n > static_cast<int64_t>(s.history.size()) ||
      s.n_rows != static_cast<int64_t>(s.history.size()))
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("session: cannot keep {} of {} cached tokens", n, s.history.size()));
  // Rows are handed out in order, so the first n rows hold exactly the first n tokens; rows past
  // n are overwritten before any later step can read them (a step reads rows [0, n_rows + T)).
  s.history.resize(static_cast<size_t>(n));
  s.n_rows = n;
  s.seq_pos.assign(1, n);
  return {};
}

std::span<const float> Session::last_logits() const { return impl_->last; }
int64_t Session::n_past() const { return impl_->position(0); }
void Session::reset() {
  impl_->n_rows = 0;
  impl_->history.clear();
  std::fill(impl_->seq_pos.begin(), impl_->seq_pos.end(), 0);
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
