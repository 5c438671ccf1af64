#include "backend/ref/ref_backend.h"

#include <fmt/format.h>

#include <cstring>

#include "backend/ref/kernel.h"

namespace glass::backend::ref {
namespace {

using graph::Node;
using graph::NodeId;
using graph::Op;

// Where a node's data lives during a run.
enum class Storage : uint8_t { Input, State, Weight, Constant, Alias, Arena };

struct Slot {
  Storage storage = Storage::Arena;
  size_t index = 0;             // input/state index, aliased node, or arena offset in bytes
  const void* fixed = nullptr;  // weights and constants
  KernelFn kernel = nullptr;    // null for leaves and aliases
  int state = -1;               // for row writes: the state written
};

class RefWorkspace final : public Workspace {
 public:
  explicit RefWorkspace(size_t arena_bytes, size_t scratch_floats, size_t n_nodes)
      : arena((arena_bytes + sizeof(float) - 1) / sizeof(float)),
        scratch(scratch_floats + 1),
        ptrs(n_nodes) {}
  std::vector<float> arena;  // float-aligned storage for every intermediate
  std::vector<float> scratch;
  std::vector<void*> ptrs;
};

class RefPlan final : public Plan {
 public:
  RefPlan(graph::Graph g, graph::RewriteLog log, graph::Bindings max)
      : g_(std::move(g)), log_(std::move(log)), max_(max) {}

  Status build(const WeightResolver& weights) {
    const auto inputs = g_.leaves(Op::Input);
    const auto states = g_.leaves(Op::State);
    slots_.resize(g_.nodes.size());
    n_inputs_ = inputs.size();
    n_states_ = states.size();
    size_t offset = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Node& n = g_.nodes[i];
      Slot& s = slots_[i];
      const graph::Extents ext = graph::resolve(n.shape, max_);
      switch (n.op) {
        case Op::Input:
          s.storage = Storage::Input;
          s.index = index_of(inputs, i);
          continue;
        case Op::State:
          s.storage = Storage::State;
          s.index = index_of(states, i);
          continue;
        case Op::Constant:
          s.storage = Storage::Constant;
          s.fixed = std::get<graph::ConstantAttrs>(n.attrs).values.data();
          continue;
        case Op::Parameter: {
          auto data = weights(n);
          if (!data) return data.error();
          s.storage = Storage::Weight;
          s.fixed = *data;
          continue;
        }
        default:
          break;
      }
      s.kernel = find_kernel(g_, n);
      if (s.kernel == nullptr)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("ref: no kernel for {}", kernel_signature(g_, n)));
      scratch_floats_ = std::max(scratch_floats_, scratch_for(n, ext));
      const bool row_write = n.op == Op::ScatterRows || n.op == Op::KvWrite || n.op == Op::DeltaNetState;
      const int written = row_write ? root_state(n.inputs[0]) : -1;
      if (n.op == Op::Reshape || written >= 0) {
        s.storage = Storage::Alias;
        s.index = static_cast<size_t>(n.inputs[0]);
        s.state = written >= 0 ? static_cast<int>(slots_[static_cast<size_t>(written)].index) : -1;
        continue;
      }
      s.storage = Storage::Arena;
      s.index = offset;
      offset += (*graph::dtype_bytes(n.dtype, static_cast<uint64_t>(ext.numel())) + 63) / 64 * 64;
    }
    arena_bytes_ = offset;
    for (const graph::Output& o : g_.outputs)
      if (g_.node(o.node).dtype != graph::DType::F32)
        return make_error(ErrorCode::Unsupported, fmt::format("ref: output '{}' must be f32", o.name));
    return {};
  }

  std::unique_ptr<Workspace> make_workspace() const override {
    return std::make_unique<RefWorkspace>(arena_bytes_, scratch_floats_, g_.nodes.size());
  }

  Status run(const StepArgs& args, Workspace& workspace, StepStats& stats) const override {
    auto& ws = static_cast<RefWorkspace&>(workspace);
    if (auto st = check_args(args, stats); !st) return st;
    auto* arena = reinterpret_cast<std::byte*>(ws.arena.data());
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      const Slot& s = slots_[i];
      switch (s.storage) {
        case Storage::Input:
          ws.ptrs[i] = const_cast<void*>(args.inputs[s.index]);
          break;
        case Storage::State:
          ws.ptrs[i] = args.states[s.index];
          break;
        case Storage::Weight:
        case Storage::Constant:
          ws.ptrs[i] = const_cast<void*>(s.fixed);
          break;
        case Storage::Alias:
          ws.ptrs[i] = ws.ptrs[s.index];
          break;
        case Storage::Arena:
          ws.ptrs[i] = arena + s.index;
          break;
      }
      if (s.kernel == nullptr) continue;
      const Node& n = g_.nodes[i];
      KernelArgs ka{n,
                    TensorRef{ws.ptrs[i], graph::resolve(n.shape, args.bind), n.dtype},
                    {},
                    &args.bind,
                    ws.scratch.data(),
                    nullptr};
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const Node& in = g_.node(n.inputs[k]);
        ka.in[k] = TensorRef{ws.ptrs[static_cast<size_t>(n.inputs[k])], graph::resolve(in.shape, args.bind),
                             in.dtype};
      }
      if (s.state >= 0) ka.rows_written = &stats.state_rows_written[static_cast<size_t>(s.state)];
      if (auto st = s.kernel(ka); !st) return st;
    }
    for (size_t k = 0; k < g_.outputs.size(); ++k) {
      const NodeId id = g_.outputs[k].node;
      const auto bytes =
          static_cast<size_t>(graph::resolve(g_.node(id).shape, args.bind).numel()) * sizeof(float);
      std::memcpy(args.outputs[k], ws.ptrs[static_cast<size_t>(id)], bytes);
    }
    return {};
  }

  const graph::Graph& compiled_graph() const override { return g_; }
  const graph::RewriteLog& rewrites() const override { return log_; }
  const graph::Bindings& max_bindings() const override { return max_; }

 private:
  static size_t index_of(const std::vector<NodeId>& ids, size_t node) {
    for (size_t k = 0; k < ids.size(); ++k)
      if (static_cast<size_t>(ids[k]) == node) return k;
    return 0;
  }

  // The state leaf a chain of in-place row writes starts from, or -1.
  int root_state(NodeId id) const {
    const Node& n = g_.node(id);
    if (n.op == Op::State) return id;
    if (n.op == Op::ScatterRows || n.op == Op::KvWrite || n.op == Op::DeltaNetState)
      return root_state(n.inputs[0]);
    return -1;
  }

  size_t scratch_for(const Node& n, const graph::Extents& ext) const {
    if (n.op == Op::MatMul) {  // one row of K; K may be symbolic (attention's decomposition: p . v over S)
      const graph::Extents w = graph::resolve(g_.node(n.inputs[1]).shape, max_);
      return static_cast<size_t>(w.dims[static_cast<size_t>(w.rank - 1)]);
    }
    if (n.op == Op::Attention) {  // a score per key a step reads (S at most), two rows of D
      const int64_t keys = graph::resolve(std::get<graph::AttentionAttrs>(n.attrs).kv_len, max_);
      return static_cast<size_t>(keys + 2 * ext.dims[2]);
    }
    if (n.op == Op::DeltaNet) {  // one sequence's state [Hv, D, D]
      const graph::Shape& v = g_.node(n.inputs[2]).shape;
      return static_cast<size_t>(v[1].value * v[2].value * v[2].value);
    }
    if (n.op == Op::Moe) {
      const graph::Shape& gate = g_.node(n.inputs[2]).shape;  // [n_expert, ffn, dim]
      return moe_scratch_floats(gate[2].value, gate[1].value, std::get<graph::MoeAttrs>(n.attrs).n_used);
    }
    return 0;
  }

  Status check_args(const StepArgs& a, StepStats& stats) const {
    for (int s = 0; s < static_cast<int>(graph::Sym::kSentinel); ++s) {
      const auto sym = static_cast<graph::Sym>(s);
      if (sym == graph::Sym::None) continue;
      if (a.bind[sym] < 0 || a.bind[sym] > max_[sym])
        return make_error(ErrorCode::CapacityExceeded,
                          fmt::format("ref: {} = {} outside this plan's bucket [0, {}]", graph::sym_name(sym),
                                      a.bind[sym], max_[sym]));
    }
    if (a.inputs.size() != n_inputs_ || a.states.size() != n_states_ || a.outputs.size() != g_.outputs.size())
      return make_error(ErrorCode::InvalidArgument,
                        "ref: step arguments do not match the plan's inputs/states/outputs");
    if (stats.state_rows_written.size() < a.states.size()) stats.state_rows_written.resize(a.states.size());
    return {};
  }

  graph::Graph g_;
  graph::RewriteLog log_;
  graph::Bindings max_;
  std::vector<Slot> slots_;
  size_t arena_bytes_ = 0;
  size_t scratch_floats_ = 0;
  size_t n_inputs_ = 0;
  size_t n_states_ = 0;
};

}  // namespace

bool RefBackend::supports(const graph::Graph& g, const graph::Node& n) const {
  return graph::is_leaf(n.op) || find_kernel(g, n) != nullptr;
}

std::vector<std::string> RefBackend::kernel_table() const { return kernel_table_lines(); }

Result<std::unique_ptr<Plan>> RefBackend::compile(const graph::Graph& g, const WeightResolver& weights,
                                                  const CompileOptions& options) const {
  auto lowered = lower_for(*this, g, options);
  if (!lowered) return lowered.error();
  auto plan = std::make_unique<RefPlan>(std::move(lowered->graph), std::move(lowered->log), options.max);
  if (auto st = plan->build(weights); !st) return st.error();
  return std::unique_ptr<Plan>(std::move(plan));
}

}  // namespace glass::backend::ref
