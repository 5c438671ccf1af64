// A Session owns the KV cache (the graph's state tensors), the step input buffers and one
// workspace per plan, all allocated once. eval() binds T and S and runs the prefill plan (several
// tokens) or the decode plan (one token); nothing in that loop allocates or re-reads the prefix.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/model_impl.h"

namespace glass {

namespace {

// One compiled plan as this session drives it: the workspace and the step arguments, whose
// buffers point at the session's inputs, states and logits.
struct BoundPlan {
  std::shared_ptr<backend::Plan> plan;
  std::unique_ptr<backend::Workspace> workspace;
  backend::StepArgs args;
  backend::StepStats stats;
  std::vector<models::StateKind> kinds;  // per state in args.states
};

}  // namespace

struct Session::Impl {
  std::shared_ptr<const Model> model;
  const Model::Impl* m = nullptr;
  std::vector<std::vector<float>> states;  // float-aligned storage for each state tensor
  std::map<std::string, size_t> state_index;
  std::vector<int32_t> tokens, positions, slots;  // n_batch each
  std::vector<float> logits;                      // n_batch x vocab
  std::vector<float> last;                        // vocab
  BoundPlan prefill, decode;
  SessionStats stats;
  int64_t n_past = 0;

  Status bind(BoundPlan& bp, int64_t max_t);
  Status run_chunk(std::span<const int32_t> chunk, std::span<float> out);
};

Status Session::Impl::bind(BoundPlan& bp, int64_t max_t) {
  if (bp.plan) return {};
  auto plan = m->plan(max_t);
  if (!plan) return plan.error();
  bp.plan = *plan;
  bp.workspace = bp.plan->make_workspace();
  const graph::Graph& g = bp.plan->compiled_graph();
  for (graph::NodeId id : g.leaves(graph::Op::Input)) {
    const std::string& name = g.node(id).name;
    if (name == "tokens")
      bp.args.inputs.push_back(tokens.data());
    else if (name == "positions")
      bp.args.inputs.push_back(positions.data());
    else if (name == "slots")
      bp.args.inputs.push_back(slots.data());
    else
      return make_error(ErrorCode::Internal,
                        fmt::format("session: the graph asks for unknown input '{}'", name));
  }
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const auto it = state_index.find(g.node(id).name);
    if (it == state_index.end())
      return make_error(ErrorCode::Internal, fmt::format("session: unknown state '{}'", g.node(id).name));
    bp.args.states.push_back(states[it->second].data());
    bp.kinds.push_back(m->model_graph.state_kinds[it->second]);
  }
  bp.args.outputs = {logits.data()};
  bp.stats.state_rows_written.assign(bp.args.states.size(), 0);
  return {};
}

Status Session::Impl::run_chunk(std::span<const int32_t> chunk, std::span<float> out) {
  const auto n = static_cast<int64_t>(chunk.size());
  BoundPlan& bp = n == 1 ? decode : prefill;
  if (auto st = bind(bp, n == 1 ? 1 : m->info.n_batch); !st) return st;
  for (int64_t i = 0; i < n; ++i) {
    tokens[static_cast<size_t>(i)] = chunk[static_cast<size_t>(i)];
    positions[static_cast<size_t>(i)] = static_cast<int32_t>(n_past + i);
    slots[static_cast<size_t>(i)] = static_cast<int32_t>(n_past + i);  // dense cache: row = position
  }
  bp.args.bind[graph::Sym::T] = n;
  bp.args.bind[graph::Sym::S] = n_past + n;
  uint64_t before = 0, after = 0;
  for (size_t k = 0; k < bp.kinds.size(); ++k)
    if (bp.kinds[k] != models::StateKind::Positions) before += bp.stats.state_rows_written[k];
  if (auto st = bp.plan->run(bp.args, *bp.workspace, bp.stats); !st) return st;
  for (size_t k = 0; k < bp.kinds.size(); ++k)
    if (bp.kinds[k] != models::StateKind::Positions) after += bp.stats.state_rows_written[k];
  stats.kv_rows_written += after - before;
  const auto vocab = static_cast<size_t>(m->info.vocab_size);
  if (!out.empty()) std::copy_n(logits.begin(), static_cast<size_t>(n) * vocab, out.begin());
  std::copy_n(logits.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(n - 1) * vocab), vocab,
              last.begin());
  n_past += n;
  stats.n_eval_calls++;
  stats.n_tokens_evaluated += static_cast<uint64_t>(n);
  return {};
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Model::new_session() const {
  auto s = std::make_unique<Session::Impl>();
  s->model = shared_from_this();
  s->m = impl_.get();
  const graph::Graph& g = impl_->model_graph.graph;
  for (graph::NodeId id : g.leaves(graph::Op::State)) {
    const graph::Node& n = g.node(id);
    const auto bytes =
        *graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, {}).numel()));
    s->state_index.emplace(n.name, s->states.size());
    s->states.emplace_back((bytes + sizeof(float) - 1) / sizeof(float), 0.0f);
  }
  const auto batch = static_cast<size_t>(impl_->info.n_batch);
  s->tokens.assign(batch, 0);
  s->positions.assign(batch, 0);
  s->slots.assign(batch, 0);
  s->logits.assign(batch * static_cast<size_t>(impl_->info.vocab_size), 0.0f);
  s->last.assign(static_cast<size_t>(impl_->info.vocab_size), 0.0f);
  return std::make_unique<Session>(std::move(s));
}

Status Session::eval(std::span<const int32_t> tokens, std::span<float> all_logits) {
  Impl& s = *impl_;
  const auto n = static_cast<int64_t>(tokens.size());
  const int64_t vocab = s.m->info.vocab_size;
  if (n == 0) return make_error(ErrorCode::InvalidArgument, "session: eval needs at least one token");
  if (!all_logits.empty() && static_cast<int64_t>(all_logits.size()) != n * vocab)
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("session: logits buffer holds {} floats, {} tokens need {}",
                                  all_logits.size(), n, n * vocab));
  if (s.n_past + n > s.m->info.n_ctx)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("session: {} cached + {} new tokens exceed the context of {}", s.n_past, n,
                                  s.m->info.n_ctx));
  for (int32_t id : tokens)
    if (id < 0 || id >= vocab)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("session: token id {} outside the vocabulary [0, {})", id, vocab));
  for (int64_t done = 0; done < n;) {
    const int64_t c = std::min(n - done, s.m->info.n_batch);
    auto out = all_logits.empty()
                   ? std::span<float>{}
                   : all_logits.subspan(static_cast<size_t>(done * vocab), static_cast<size_t>(c * vocab));
    if (auto st = s.run_chunk(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(c)), out); !st)
      return st;
    done += c;
  }
  return {};
}

std::span<const float> Session::last_logits() const { return impl_->last; }
int64_t Session::n_past() const { return impl_->n_past; }
void Session::reset() { impl_->n_past = 0; }
const SessionStats& Session::stats() const { return impl_->stats; }
const Model& Session::model() const { return *impl_->model; }

}  // namespace glass
