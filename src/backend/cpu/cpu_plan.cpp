// The cpu plan: compiled once into a flat schedule of kernel calls whose operands are bound to
// fixed locations (an arena offset, a weight pointer into the mapping, the n-th step input, state
// or output); run() resolves the step's extents and walks it. Nothing in run() allocates.
//
// Buffers: every intermediate gets an arena offset from the memory planner, by liveness. Reshapes
// and row writes into state are aliases (no buffer); an in-place kernel (norm, rope, swiglu, add)
// writes over input 0's buffer when this node is its last reader; output nodes write straight into
// the caller's output buffer.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/memory_planner.h"
#include "graph/fuse.h"

namespace glass::backend::cpu {
namespace {

using graph::Node;
using graph::NodeId;
using graph::Op;

constexpr int64_t kForever = std::numeric_limits<int64_t>::max();
constexpr size_t kAlign = 64;

struct Location {
  enum Kind : uint8_t { Arena, Fixed, Input, State, Output } kind = Arena;
  uint32_t index = 0;  // input, state or output index
  size_t offset = 0;   // arena offset
  const void* fixed = nullptr;
};

struct Step {
  KernelFn fn = nullptr;
  const Node* node = nullptr;
  Location out;
  std::array<Location, kMaxInputs> in{};
  std::array<const Node*, kMaxInputs> in_node{};
  KernelData data;
  size_t prepared = 0;     // offset into prepared_ (+1; 0 = none)
  int state = -1;          // rows_written counter of a row write into state
  int64_t converted = -1;  // arena offset of input 0's converted copy, or -1
  bool convert_now = false;
  std::string label;          // the profile's name for this kernel (OpTime)
  uint64_t weight_bytes = 0;  // parameter bytes a matmul reads
  std::vector<Step> group;    // matmuls reading one input run as one (kernels::matmul_group)
};

struct AlignedBuffer {
  std::unique_ptr<std::byte[]> raw;
  std::byte* data = nullptr;
  explicit AlignedBuffer(size_t bytes) : raw(new std::byte[bytes + kAlign]) {
    auto p = reinterpret_cast<uintptr_t>(raw.get());
    data = raw.get() + ((kAlign - p % kAlign) % kAlign);
  }
};

class CpuWorkspace final : public Workspace {
 public:
  CpuWorkspace(size_t arena, size_t scratch) : arena_(arena), scratch_(scratch) {}
  std::byte* arena() { return arena_.data; }
  std::byte* scratch() { return scratch_.data; }

 private:
  AlignedBuffer arena_, scratch_;
};

class CpuPlan final : public Plan {
 public:
  CpuPlan(graph::Graph g, graph::RewriteLog log, graph::Bindings max, Isa isa, DecodeStrategy strategy,
          std::shared_ptr<ThreadPool> pool, std::shared_ptr<WeightRepacks> repacks, bool batch_invariant)
      : g_(std::move(g)),
        log_(std::move(log)),
        max_(max),
        isa_(isa),
        strategy_(strategy),
        batch_invariant_(batch_invariant),
        pool_(std::move(pool)),
        repacks_(std::move(repacks)) {}

  Status build(const WeightResolver& weights);

  std::unique_ptr<Workspace> make_workspace() const override {
    return std::make_unique<CpuWorkspace>(info_.arena_bytes, info_.scratch_bytes);
  }
  Status run(const StepArgs& args, Workspace& workspace, StepStats& stats) const override;
  const graph::Graph& compiled_graph() const override { return g_; }
  const graph::RewriteLog& rewrites() const override { return log_; }
  const graph::Bindings& max_bindings() const override { return max_; }
  const CpuPlanInfo& info() const { return info_; }

 private:
  size_t bytes_at_max(const Node& n) const {
    return *graph::dtype_bytes(n.dtype, static_cast<uint64_t>(graph::resolve(n.shape, max_).numel()));
  }
  struct Layout;
  void find_lifetimes(Layout& l) const;
  Status choose_kernels(const WeightResolver& weights, Layout& l);
  void fuse_delta_net_states(Layout& l);
  void plan_buffers(Layout& l);
  Status emit_steps(Layout& l);
  Status check_args(const StepArgs& a, StepStats& stats) const;
  Status read_repacked_weights(Step& s, const Node& nd, const kernels::MatmulKernel& layout);
  void read_repacked_tables(int threads);
  void label_step(Step& s, const char* layout) const;
  std::vector<int64_t> matmul_groups(const std::vector<KernelChoice>& choice, const std::vector<size_t>& root,
                                     const std::vector<Location>& loc,
                                     const std::vector<int>& output_of) const;
  bool join_group(size_t head_step, Step& s);
  void report_fusions(const std::map<Op, size_t>& in_place_by_op,
                      const std::map<std::pair<graph::NodeId, uintptr_t>, size_t>& conversions,
                      const std::map<size_t, std::pair<size_t, const char*>>& conversion_readers);

  graph::Graph g_;
  graph::RewriteLog log_;
  graph::Bindings max_;
  Isa isa_;
  DecodeStrategy strategy_;
  bool batch_invariant_;
  std::shared_ptr<ThreadPool> pool_;
  std::shared_ptr<WeightRepacks> repacks_;
  std::vector<Step> steps_;
  std::vector<float> prepared_;
  std::vector<std::pair<size_t, Location>> copies_;  // outputs not written in place: (output, source)
  std::vector<const Node*> copy_nodes_;
  CpuPlanInfo info_;
  size_t n_inputs_ = 0, n_states_ = 0;
};

// build's phases, each a function over what the earlier ones worked out per node.
struct CpuPlan::Layout {
  explicit Layout(size_t n)
      : last(n, -1),
        output_of(n, -1),
        root(n),
        end(n, -1),
        loc(n),
        choice(n),
        written_state(n, -1),
        conversion_of(n, -1),
        converts(n, false) {}
  std::vector<int64_t> last;         // the last reader of every node (outputs: to the end of the step)
  std::vector<int> output_of;        // the output a node is, or -1
  std::vector<size_t> root;          // the node whose buffer this node's data lives in
  std::vector<int64_t> end;          // per root: the last step reading it or an alias of it
  std::vector<Location> loc;         // per root
  std::vector<KernelChoice> choice;  // per node: its kernel
  std::vector<int> written_state;    // per node: the state it writes rows into, or -1
  std::map<Op, size_t> in_place_by_op;
  std::vector<int64_t> group_head;  // per node: the first matmul of its group, or -1
  // Converted inputs (quantized activations): per (input node, conversion) its buffer's life, and
  // per life (readers, type); per node the life it reads and whether it converts.
  std::map<std::pair<graph::NodeId, uintptr_t>, size_t> conversions;
  std::map<size_t, std::pair<size_t, const char*>> conversion_readers;
  std::vector<int64_t> conversion_of;
  std::vector<bool> converts;
  MemoryPlan mp;
};

Status CpuPlan::build(const WeightResolver& weights) {
  n_inputs_ = g_.leaves(Op::Input).size();
  n_states_ = g_.leaves(Op::State).size();
  for (const graph::Output& o : g_.outputs)
    if (g_.node(o.node).dtype != graph::DType::F32)
      return make_error(ErrorCode::Unsupported, fmt::format("cpu: output '{}' must be f32", o.name));
  Layout l(g_.nodes.size());
  find_lifetimes(l);
  if (Status st = choose_kernels(weights, l); !st) return st;
  plan_buffers(l);
  if (Status st = emit_steps(l); !st) return st;
  report_fusions(l.in_place_by_op, l.conversions, l.conversion_readers);
  return {};
}

void CpuPlan::find_lifetimes(Layout& l) const {
  const size_t n = g_.nodes.size();
  // Last reader of every node (outputs live to the end of the step).
  for (size_t i = 0; i < n; ++i)
    for (NodeId in : g_.nodes[i].inputs) l.last[static_cast<size_t>(in)] = static_cast<int64_t>(i);
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const auto id = static_cast<size_t>(g_.outputs[k].node);
    l.last[id] = kForever;
    if (l.output_of[id] < 0) l.output_of[id] = static_cast<int>(k);
  }
}

// Every node's kernel (an error naming the op and dtypes where the table has none) and where its
// data lives: inputs, states, constants and weights in place; a reshape, a row write into state or
// an in-place kernel in its input's buffer; an output in the caller's; the rest in the arena.
Status CpuPlan::choose_kernels(const WeightResolver& weights, Layout& l) {
  const size_t n = g_.nodes.size();
  const auto inputs = g_.leaves(Op::Input);
  const auto states = g_.leaves(Op::State);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g_.nodes[i];
    l.root[i] = i;
    switch (nd.op) {
      case Op::Input:
        l.loc[i] = {Location::Input,
                    static_cast<uint32_t>(std::find(inputs.begin(), inputs.end(), static_cast<NodeId>(i)) -
                                          inputs.begin())};
        continue;
      case Op::State:
        l.loc[i] = {Location::State,
                    static_cast<uint32_t>(std::find(states.begin(), states.end(), static_cast<NodeId>(i)) -
                                          states.begin())};
        continue;
      case Op::Constant:
        l.loc[i] = {Location::Fixed, 0, 0, std::get<graph::ConstantAttrs>(nd.attrs).values.data()};
        continue;
      case Op::Parameter: {
        auto data = weights(nd);
        if (!data) return data.error();
        l.loc[i] = {Location::Fixed, 0, 0, *data};
        continue;
      }
      default:
        break;
    }
    if (nd.inputs.size() > kMaxInputs)
      return make_error(ErrorCode::Unsupported, fmt::format("cpu: {} has more than {} operands",
                                                            kernel_signature(g_, nd), kMaxInputs));
    auto k = choose_kernel(g_, nd, {isa_, strategy_, repacks_ != nullptr, batch_invariant_});
    if (!k) return k.error();
    l.choice[i] = *k;
    const size_t r0 = l.root[static_cast<size_t>(nd.inputs[0])];
    const bool row_write = nd.op == Op::KvWrite || nd.op == Op::ScatterRows || nd.op == Op::DeltaNetState;
    const bool into_state = row_write && l.loc[r0].kind == Location::State;
    // In place over input k->in_place_input (0 for most kernels); over another input only when no
    // other operand lives in that buffer (the kernel reads those while writing).
    const size_t ip =
        l.root[static_cast<size_t>(nd.inputs[std::min<size_t>(k->in_place_input, nd.inputs.size() - 1)])];
    bool in_place = k->in_place && l.output_of[i] < 0 && l.loc[ip].kind == Location::Arena &&
                    l.end[ip] == static_cast<int64_t>(i) && bytes_at_max(g_.nodes[ip]) == bytes_at_max(nd);
    for (size_t j = 0; in_place && k->in_place_input != 0 && j < nd.inputs.size(); ++j)
      in_place = j == k->in_place_input || l.root[static_cast<size_t>(nd.inputs[j])] != ip;
    if (nd.op == Op::Reshape || into_state || in_place) {
      l.root[i] = in_place ? ip : r0;
      if (into_state) l.written_state[i] = static_cast<int>(l.loc[r0].index);
      if (in_place) {
        ++info_.n_in_place;
        ++l.in_place_by_op[nd.op];
      }
    } else if (l.output_of[i] >= 0) {
      l.loc[i] = {Location::Output, static_cast<uint32_t>(l.output_of[i])};
    }
    for (NodeId in : nd.inputs) {
      const size_t r = l.root[static_cast<size_t>(in)];
      l.end[r] = std::max(l.end[r], l.last[static_cast<size_t>(in)]);
    }
    l.end[l.root[i]] = std::max(l.end[l.root[i]], l.last[i]);
  }
  fuse_delta_net_states(l);
  return {};
}

// A delta_net_state whose operands are its delta_net's (same k, v, g, beta, sequences, slots and
// state) only repeats that recurrence to keep the states: the delta_net writes them as it goes
// (kernels::delta_net_writing_states) and the state node runs nothing. Its order stays: every
// reader of the pool before the pair reads it before the delta_net runs.
void CpuPlan::fuse_delta_net_states(Layout& l) {
  size_t fused = 0;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const graph::Node& st = g_.nodes[i];
    if (st.op != Op::DeltaNetState || l.choice[i].fn == nullptr) continue;
    const auto out = static_cast<size_t>(st.inputs[7]);
    const graph::Node& dn = g_.nodes[out];
    const bool same = dn.op == Op::DeltaNet && dn.inputs[5] == st.inputs[0] &&
                      std::equal(st.inputs.begin() + 1, st.inputs.begin() + 5, dn.inputs.begin() + 1) &&
                      dn.inputs[6] == st.inputs[5] && dn.inputs[7] == st.inputs[6] &&
                      l.choice[out].fn == &kernels::delta_net;
    if (!same) continue;
    l.choice[out].fn = &kernels::delta_net_writing_states;
    l.choice[i].fn = nullptr;
    ++fused;
  }
  if (fused > 0)
    log_.fired.push_back(
        fmt::format("fused: delta_net writes the states its delta_net_state keeps ({} pairs)", fused));
}

// Matmul groups, then the arena: a life per buffer (and per converted input) over the schedule,
// packed by plan_memory.
void CpuPlan::plan_buffers(Layout& l) {
  const size_t n = g_.nodes.size();
  l.group_head = matmul_groups(l.choice, l.root, l.loc, l.output_of);
  // A reader extends its input's root; recompute ends over the final roots.
  std::fill(l.end.begin(), l.end.end(), -1);
  for (size_t i = 0; i < n; ++i)
    l.end[l.root[i]] = std::max(l.end[l.root[i]], std::max(l.last[i], static_cast<int64_t>(i)));

  std::vector<BufferLife> lives;
  std::vector<size_t> owners;  // per life: the node whose buffer it is (n + k: conversion k)
  for (size_t i = 0; i < n; ++i) {
    if (l.root[i] != i || graph::is_leaf(g_.nodes[i].op) || l.loc[i].kind != Location::Arena) continue;
    if (l.choice[i].fn == nullptr && g_.nodes[i].op == Op::Reshape) continue;
    // A grouped matmul writes its output when its group's first matmul runs.
    lives.push_back({bytes_at_max(g_.nodes[i]),
                     l.group_head[i] >= 0 ? l.group_head[i] : static_cast<int64_t>(i), l.end[i]});
    owners.push_back(i);
  }
  // Converted inputs (quantized activations), one per (input node, conversion), live from the
  // first node using it to the last.
  for (size_t i = 0; i < n; ++i) {
    if (l.choice[i].convert == nullptr) continue;
    const InputConversion c = l.choice[i].convert(g_, g_.nodes[i], max_, l.choice[i].base);
    if (c.bytes == 0) continue;
    const auto key = std::make_pair(g_.nodes[i].inputs[0], c.key);
    auto it = l.conversions.find(key);
    if (it == l.conversions.end()) {
      it = l.conversions.emplace(key, lives.size()).first;
      lives.push_back({c.bytes, static_cast<int64_t>(i), static_cast<int64_t>(i)});
      owners.push_back(n + it->second);
      l.converts[i] = true;
    }
    lives[it->second].last = static_cast<int64_t>(i);
    l.conversion_of[i] = static_cast<int64_t>(it->second);
    auto& readers = l.conversion_readers[it->second];
    ++readers.first;
    readers.second = c.what;
  }
  l.mp = plan_memory(lives, kAlign);
  for (size_t b = 0; b < owners.size(); ++b)
    if (owners[b] < n) l.loc[owners[b]].offset = l.mp.offsets[b];
  info_.arena_bytes = l.mp.arena_bytes;
  info_.arena_unshared = l.mp.total_bytes;
}

// The schedule: one step per node that runs a kernel (repacked weights where the table has a
// layout, grouped matmuls joined), then the output copies and the repack report.
Status CpuPlan::emit_steps(Layout& l) {
  const size_t n = g_.nodes.size();
  const int threads = pool_->size();
  std::set<std::string> repacked_layouts;
  std::vector<size_t> step_of(n, 0);  // per node: its step's index
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g_.nodes[i];
    if (graph::is_leaf(nd.op) || l.choice[i].fn == nullptr) continue;
    Step s;
    s.fn = l.choice[i].fn;
    s.node = &nd;
    s.out = l.loc[l.root[i]];
    for (size_t k = 0; k < nd.inputs.size(); ++k) {
      s.in[k] = l.loc[l.root[static_cast<size_t>(nd.inputs[k])]];
      s.in_node[k] = &g_.node(nd.inputs[k]);
    }
    s.data = l.choice[i].data;
    const char* layout = nullptr;
    if (const kernels::MatmulKernel* repack = l.choice[i].repack) {
      if (Status st = read_repacked_weights(s, nd, *repack); !st) return st;
      layout = repack->layout;
      repacked_layouts.insert(layout);
    }
    s.state = l.written_state[i];
    if (l.conversion_of[i] >= 0) {
      s.converted = static_cast<int64_t>(l.mp.offsets[static_cast<size_t>(l.conversion_of[i])]);
      s.convert_now = l.converts[i];
    }
    if (l.choice[i].prepare != nullptr) {
      const std::vector<float> values = l.choice[i].prepare(nd);
      s.prepared = prepared_.size() + 1;
      prepared_.insert(prepared_.end(), values.begin(), values.end());
    }
    if (l.choice[i].scratch != nullptr)
      info_.scratch_bytes =
          std::max(info_.scratch_bytes, l.choice[i].scratch(g_, nd, max_, threads, l.choice[i].base));
    label_step(s, layout);
    if (l.group_head[i] >= 0 && join_group(step_of[static_cast<size_t>(l.group_head[i])], s)) continue;
    step_of[i] = steps_.size();
    steps_.push_back(s);
  }
  read_repacked_tables(threads);
  for (Step& st : steps_)
    if (!st.group.empty()) {
      st.label = "matmul_group " + st.group[0].label.substr(st.group[0].label.find(' ') + 1);
      st.weight_bytes = 0;
      for (const Step& part : st.group) st.weight_bytes += part.weight_bytes;
    }
  info_.n_kernels = steps_.size();
  if (info_.n_repacked > 0) {
    const RepackTotals t = repacks_->totals();
    log_.fired.push_back(fmt::format(
        "repack_weights: {} matmuls read {} copies of their weights ({} weights, {:.1f} MiB, made once "
        "for all of the backend's plans in {:.2f} s)",
        info_.n_repacked, fmt::join(repacked_layouts, " / "), t.weights,
        static_cast<double>(t.bytes) / (1 << 20), t.seconds));
  }
  for (size_t k = 0; k < g_.outputs.size(); ++k) {
    const auto id = static_cast<size_t>(g_.outputs[k].node);
    const Location& where = l.loc[l.root[id]];
    if (where.kind == Location::Output && where.index == k) continue;
    copies_.emplace_back(k, where);
    copy_nodes_.push_back(&g_.nodes[id]);
  }
  return {};
}

// A matmul whose row the table chose in a repacked layout reads the backend's copies of its
// weights in it (made once for all of the backend's plans, weight_repack.h).
Status CpuPlan::read_repacked_weights(Step& s, const Node& nd, const kernels::MatmulKernel& layout) {
  const size_t n_weights = nd.op == Op::MatMulSwiGlu || nd.op == Op::MatMulGeGlu ? 2 : 1;
  for (size_t j = 1; j <= n_weights; ++j) {
    const Node& w = *s.in_node[j];
    const int64_t rows = w.shape[0].value, k = w.shape[1].value;
    const size_t bytes = *graph::dtype_bytes(w.dtype, static_cast<uint64_t>(rows * k));
    auto copy = repacks_->get(s.in[j].fixed, bytes, rows, k, layout, *pool_);
    if (!copy) return copy.error();
    s.in[j].fixed = *copy;
  }
  ++info_.n_repacked;
  return {};
}

// Row lookups of a table that the backend has repacked for a matmul (a tied embedding, repacked for
// the output projection, by this plan or an earlier one) read the repacked copy, since its owner
// may have dropped the file's pages of the original (BackendOptions::weight_copied).
void CpuPlan::read_repacked_tables(int threads) {
  if (repacks_ == nullptr) return;
  for (Step& s : steps_) {
    if (s.node->op != Op::Embedding || s.fn != &kernels::embedding || s.in[0].kind != Location::Fixed)
      continue;
    const WeightRepacks::Found copy = repacks_->find(s.in[0].fixed);
    if (copy.data == nullptr || copy.kernel->unpack_row == nullptr) continue;
    const Node& table = *s.in_node[0];
    s.fn = &kernels::embedding_repacked;
    s.in[0].fixed = copy.data;
    s.data = copy.kernel;
    s.label = fmt::format("embedding {}", copy.kernel->layout);
    const size_t row_bytes = *graph::dtype_bytes(table.dtype, static_cast<uint64_t>(table.shape[1].value));
    info_.scratch_bytes =
        std::max(info_.scratch_bytes, kernels::embedding_repacked_scratch(row_bytes, threads));
    log_.fired.push_back(fmt::format("embedding_repacked: the lookup in '{}' reads the matmul's {} copy",
                                     table.name, copy.kernel->layout));
  }
}

// Matmuls that read one input with the same kernel into their own arena buffers, one after
// another with only leaves (their weights) and aliases (reshapes, which run nothing) between them:
// a layer's q, k and v projections. Per node, the first of its group (-1: none); a group runs as
// one step (kernels::matmul_group), so its outputs live from the first one's step.
std::vector<int64_t> CpuPlan::matmul_groups(const std::vector<KernelChoice>& choice,
                                            const std::vector<size_t>& root, const std::vector<Location>& loc,
                                            const std::vector<int>& output_of) const {
  const size_t n = g_.nodes.size();
  std::vector<int64_t> head_of(n, -1);
  int64_t head = -1;
  size_t members = 0;
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = g_.nodes[i];
    if (graph::is_leaf(nd.op) || choice[i].fn == nullptr) continue;
    const bool groupable = nd.op == Op::MatMul && choice[i].fn == &kernels::matmul && root[i] == i &&
                           loc[i].kind == Location::Arena && output_of[i] < 0 &&
                           g_.node(nd.inputs[1]).op == Op::Parameter;
    if (groupable && head >= 0 && members < kernels::kMaxMatmulGroup &&
        g_.nodes[static_cast<size_t>(head)].inputs[0] == nd.inputs[0] &&
        choice[static_cast<size_t>(head)].data == choice[i].data) {
      head_of[i] = head;
      ++members;
      continue;
    }
    head = groupable ? static_cast<int64_t>(i) : -1;
    members = groupable ? 1 : 0;
  }
  return head_of;
}

// Adds matmul step s to the group of steps_[head_step] when both read with the same kernel
// (repacking may have chosen differently); false: s runs as a step of its own.
bool CpuPlan::join_group(size_t head_step, Step& s) {
  Step& head = steps_[head_step];
  if (head.data != s.data) return false;
  if (head.group.empty()) {
    Step self = head;
    head.group.push_back(std::move(self));
  }
  head.group.push_back(s);
  return true;
}

// Matmul kinds are labelled with the weights' layout (repacked) or type, and meter their weight
// bytes, so a profile shows each one's read rate.
void CpuPlan::label_step(Step& s, const char* layout) const {
  const Node& nd = *s.node;
  s.label = graph::op_name(nd.op);
  if (nd.op != Op::MatMul && nd.op != Op::MatMulAdd && nd.op != Op::MatMulSwiGlu && nd.op != Op::MatMulGeGlu)
    return;
  s.label += ' ';
  s.label += layout != nullptr ? std::string(layout) : std::string(graph::dtype_name(s.in_node[1]->dtype));
  const size_t n_weights = nd.op == Op::MatMulSwiGlu || nd.op == Op::MatMulGeGlu ? 2 : 1;
  for (size_t j = 1; j <= n_weights && j < nd.inputs.size(); ++j)
    if (s.in_node[j]->op == Op::Parameter) s.weight_bytes += bytes_at_max(*s.in_node[j]);
}

// What the plan fuses beyond the graph rewrites, one aggregated line per kind in the rewrite log
// (`glass graph --after-rewrites`): composite ops run as one kernel, kernels writing over their
// input, and activation copies several matmuls share.
std::string nodes(size_t count) { return fmt::format("{} node{}", count, count == 1 ? "" : "s"); }

void CpuPlan::report_fusions(const std::map<Op, size_t>& in_place_by_op,
                             const std::map<std::pair<graph::NodeId, uintptr_t>, size_t>& conversions,
                             const std::map<size_t, std::pair<size_t, const char*>>& conversion_readers) {
  std::map<Op, size_t> composites;
  for (const Step& s : steps_)
    if (graph::is_composite(s.node->op)) ++composites[s.node->op];
  for (const auto& [op, count] : composites) {
    switch (op) {
      case Op::RmsNorm:
        log_.fired.push_back(fmt::format("fused: rms_norm×weight kernel for {}", nodes(count)));
        break;
      case Op::Attention:
        log_.fired.push_back(fmt::format("attention: streaming online-softmax kernel ({})", nodes(count)));
        break;
      case Op::KvWrite:    // the ref kernel's row copy
      case Op::MatMulAdd:  // named by their rewrites
      case Op::MatMulSwiGlu:
      case Op::MatMulGeGlu:
        break;
      default:
        log_.fired.push_back(fmt::format("fused: {} kernel for {}", graph::op_name(op), nodes(count)));
    }
  }
  std::map<size_t, size_t> groups;  // by size
  for (const Step& s : steps_)
    if (!s.group.empty()) ++groups[s.group.size()];
  for (const auto& [size, count] : groups)
    log_.fired.push_back(
        fmt::format("matmul_group: {} matmuls reading one input run as one dispatch (x{})", size, count));
  for (const auto& [op, count] : in_place_by_op)
    log_.fired.push_back(fmt::format("in_place: {} writes over its {} ({})", graph::op_name(op),
                                     op == Op::MatMulAdd ? "residual" : "input", nodes(count)));
  // Shared copies, grouped by (readers, type): the first one's input names the group.
  std::map<std::pair<size_t, std::string>, std::pair<size_t, std::string>> shared;
  for (const auto& [key, life] : conversions) {
    const auto& [readers, what] = conversion_readers.at(life);
    if (readers < 2) continue;
    auto& group = shared[{readers, what}];
    if (group.first++ == 0) group.second = g_.node(key.first).name;
  }
  for (const auto& [key, group] : shared)
    log_.fired.push_back(fmt::format("shared_activation_quant: {} matmuls read one {} copy of '{}' (x{})",
                                     key.first, key.second, group.second, group.first));
}

Status CpuPlan::check_args(const StepArgs& a, StepStats& stats) const {
  for (int s = 0; s < static_cast<int>(graph::Sym::kSentinel); ++s) {
    const auto sym = static_cast<graph::Sym>(s);
    if (sym == graph::Sym::None) continue;
    if (a.bind[sym] < 0 || a.bind[sym] > max_[sym])
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("cpu: {} = {} outside this plan's bucket [0, {}]", graph::sym_name(sym),
                                    a.bind[sym], max_[sym]));
  }
  if (a.inputs.size() != n_inputs_ || a.states.size() != n_states_ || a.outputs.size() != g_.outputs.size())
    return make_error(ErrorCode::InvalidArgument,
                      "cpu: step arguments do not match the plan's inputs/states/outputs");
  if (stats.state_rows_written.size() < a.states.size()) stats.state_rows_written.resize(a.states.size());
  return {};
}

Status CpuPlan::run(const StepArgs& args, Workspace& workspace, StepStats& stats) const {
  if (auto st = check_args(args, stats); !st) return st;
  auto& ws = static_cast<CpuWorkspace&>(workspace);
  std::byte* arena = ws.arena();
  auto ptr = [&](const Location& l) -> void* {
    switch (l.kind) {
      case Location::Arena:
        return arena + l.offset;
      case Location::Fixed:
        return const_cast<void*>(l.fixed);
      case Location::Input:
        return const_cast<void*>(args.inputs[l.index]);
      case Location::State:
        return args.states[l.index];
      case Location::Output:
        return args.outputs[l.index];
    }
    return nullptr;
  };
  const auto lock = pool_->lock();
  backend::OpProfile* const args_profile = stats.profile;
  auto args_of = [&](const Step& s) {
    KernelArgs ka{*s.node,
                  TensorView{ptr(s.out), graph::resolve(s.node->shape, args.bind), s.node->dtype},
                  {},
                  args.bind,
                  *pool_,
                  ws.scratch(),
                  s.state >= 0 ? &stats.state_rows_written[static_cast<size_t>(s.state)] : nullptr,
                  s.data,
                  s.prepared != 0 ? prepared_.data() + (s.prepared - 1) : nullptr,
                  s.converted >= 0 ? arena + s.converted : nullptr,
                  s.convert_now,
                  batch_invariant_};
    for (size_t k = 0; k < s.node->inputs.size(); ++k)
      ka.in[k] =
          TensorView{ptr(s.in[k]), graph::resolve(s.in_node[k]->shape, args.bind), s.in_node[k]->dtype};
    return ka;
  };
  auto run_step = [&](const Step& s) -> Status {
    if (s.group.empty()) return s.fn(args_of(s));
    std::array<std::optional<KernelArgs>, kernels::kMaxMatmulGroup> parts;
    std::array<const KernelArgs*, kernels::kMaxMatmulGroup> ptrs{};
    for (size_t k = 0; k < s.group.size(); ++k) ptrs[k] = &parts[k].emplace(args_of(s.group[k]));
    return kernels::matmul_group(std::span<const KernelArgs* const>(ptrs.data(), s.group.size()));
  };
  for (const Step& s : steps_) {
    if (args_profile == nullptr) {
      if (auto st = run_step(s); !st) return st;
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (auto st = run_step(s); !st) return st;
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
    auto it = args_profile->find(s.label);
    if (it == args_profile->end()) it = args_profile->emplace(s.label, backend::OpTime{}).first;
    ++it->second.calls;
    it->second.ns += static_cast<uint64_t>(ns.count());
    it->second.weight_bytes += s.weight_bytes;
  }
  for (size_t c = 0; c < copies_.size(); ++c) {
    const auto bytes =
        static_cast<size_t>(graph::resolve(copy_nodes_[c]->shape, args.bind).numel()) * sizeof(float);
    std::memcpy(args.outputs[copies_[c].first], ptr(copies_[c].second), bytes);
  }
  return {};
}

}  // namespace

CpuBackend::CpuBackend(const CpuOptions& options)
    : isa_(std::min(options.max_isa.value_or(Isa::kSentinel), detect_isa())),
      strategy_(options.decode_strategy ? *options.decode_strategy : detect_decode_strategy()),
      pool_(std::make_shared<ThreadPool>(options.n_threads)),
      repacks_(options.repack_weights ? std::make_shared<WeightRepacks>(options.weight_copied) : nullptr) {}

std::string CpuBackend::describe() const {
  // The decode strategy chooses between walks of the AVX2 and AVX-512 kernels.
  if (isa_ >= Isa::Avx2)
    return fmt::format("cpu ({}, {} threads, {} decode)", isa_name(isa_), pool_->size(),
                       decode_strategy_name(strategy_));
  return fmt::format("cpu ({}, {} threads)", isa_name(isa_), pool_->size());
}

bool CpuBackend::supports(const graph::Graph& g, const graph::Node& n) const {
  if (graph::is_leaf(n.op)) return true;
  std::vector<graph::DType> operands;
  for (graph::NodeId in : n.inputs) operands.push_back(g.node(in).dtype);
  return has_kernel(n.op, operands, isa_);
}

std::vector<std::string> CpuBackend::kernel_table() const { return kernel_table_lines(); }

Result<std::unique_ptr<Plan>> CpuBackend::compile(const graph::Graph& g, const WeightResolver& weights,
                                                  const CompileOptions& options) const {
  auto lowered = lower_for(*this, g, options);
  if (!lowered) return lowered.error();
  if (options.fuse && !options.decompose_composites) {
    // Fusions, where this backend has the fused kernel for the operand types.
    const graph::FusionFilter accept = [this](Op op, const std::vector<graph::DType>& operands) {
      return has_kernel(op, operands, isa_);
    };
    for (auto pass : {graph::fuse_matmul_residual, graph::fuse_gate_up}) {
      auto fused = pass(lowered->graph, accept, lowered->log);
      if (!fused) return fused.error();
      lowered->graph = std::move(*fused);
    }
  }
  auto plan = std::make_unique<CpuPlan>(std::move(lowered->graph), std::move(lowered->log), options.max, isa_,
                                        strategy_, pool_, repacks_, options.batch_invariant);
  if (auto st = plan->build(weights); !st) return st.error();
  return std::unique_ptr<Plan>(std::move(plan));
}

std::optional<CpuPlanInfo> cpu_plan_info(const Plan& plan) {
  if (const auto* p = dynamic_cast<const CpuPlan*>(&plan)) return p->info();
  return std::nullopt;
}

}  // namespace glass::backend::cpu
