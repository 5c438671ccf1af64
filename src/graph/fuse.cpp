#include "graph/fuse.h"

#include <fmt/format.h>

#include <map>
#include <optional>

namespace glass::graph {
namespace {

// Readers of each node: later nodes' inputs (once per use), outputs and state updates.
std::vector<int> reader_counts(const Graph& g) {
  std::vector<int> r(g.nodes.size(), 0);
  for (const Node& n : g.nodes)
    for (NodeId in : n.inputs) ++r[static_cast<size_t>(in)];
  for (const Output& o : g.outputs) ++r[static_cast<size_t>(o.node)];
  for (const StateUpdate& u : g.state_updates) {
    ++r[static_cast<size_t>(u.state)];
    ++r[static_cast<size_t>(u.value)];
  }
  return r;
}

// A matmul the consumer may absorb: this consumer is its only reader and its weights are 2-D.
bool absorbable(const Graph& g, NodeId id, const std::vector<int>& readers) {
  const Node& m = g.node(id);
  return m.op == Op::MatMul && readers[static_cast<size_t>(id)] == 1 && g.node(m.inputs[1]).shape.size() == 2;
}

struct Fusion {
  Op op;
  std::vector<NodeId> inputs;  // ids in the old graph
};

std::vector<DType> dtypes_of(const Graph& g, const std::vector<NodeId>& ids) {
  std::vector<DType> d;
  for (NodeId id : ids) d.push_back(g.node(id).dtype);
  return d;
}

// Rebuilds `g` with the consumers in `fusions` replaced by their fused node and the matmuls they
// absorbed (`absorbed`) dropped.
Result<Graph> apply(const Graph& g, const std::map<size_t, Fusion>& fusions,
                    const std::vector<bool>& absorbed) {
  std::vector<bool> keep(absorbed.size());
  for (size_t i = 0; i < keep.size(); ++i) keep[i] = !absorbed[i];
  std::vector<NodeId> map(g.nodes.size(), -1);
  return rewrite_nodes(g, keep, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
    const auto i = static_cast<size_t>(&n - g.nodes.data());
    const auto it = fusions.find(i);
    Tensor t;
    if (it == fusions.end()) {
      t = copy_node(b, n, in);
    } else {
      std::vector<NodeId> ids;
      for (NodeId old : it->second.inputs) ids.push_back(map[static_cast<size_t>(old)]);
      t = b.add_node(it->second.op, std::move(ids), NoAttrs{}, {}, DType::F32, n.name);
    }
    map[i] = t.id;
    return t;
  });
}

}  // namespace

Result<Graph> fuse_matmul_residual(const Graph& g, const FusionFilter& accept, RewriteLog& log) {
  const std::vector<int> readers = reader_counts(g);
  std::map<size_t, Fusion> fusions;
  std::vector<bool> absorbed(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != Op::Add || n.dtype != DType::F32) continue;
    // Prefer the second operand as the product (models write add(residual, layer(x))).
    for (int k : {1, 0}) {
      const NodeId m = n.inputs[static_cast<size_t>(k)];
      const NodeId r = n.inputs[static_cast<size_t>(1 - k)];
      if (m == r || !absorbable(g, m, readers) || !(g.node(r).shape == n.shape) ||
          !(g.node(m).shape == n.shape) || g.node(r).dtype != DType::F32)
        continue;
      const Node& mm = g.node(m);
      Fusion f{Op::MatMulAdd, {mm.inputs[0], mm.inputs[1], r}};
      if (accept && !accept(f.op, dtypes_of(g, f.inputs))) continue;
      fusions.emplace(i, std::move(f));
      absorbed[static_cast<size_t>(m)] = true;
      break;
    }
  }
  if (fusions.empty()) return g;
  auto out = apply(g, fusions, absorbed);
  if (out)
    log.fired.push_back(fmt::format("fuse_matmul_residual: {} add(matmul) -> matmul_add", fusions.size()));
  return out;
}

Result<Graph> fuse_gate_up(const Graph& g, const FusionFilter& accept, RewriteLog& log) {
  const std::vector<int> readers = reader_counts(g);
  std::map<size_t, Fusion> fusions;
  std::vector<bool> absorbed(g.nodes.size(), false);
  std::map<Op, size_t> counts;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (n.op != Op::SwiGlu && n.op != Op::GeGlu) continue;
    const NodeId gate = n.inputs[0], up = n.inputs[1];
    if (gate == up || !absorbable(g, gate, readers) || !absorbable(g, up, readers)) continue;
    const Node& gm = g.node(gate);
    const Node& um = g.node(up);
    const Node& gw = g.node(gm.inputs[1]);
    const Node& uw = g.node(um.inputs[1]);
    if (gm.inputs[0] != um.inputs[0] || !(gw.shape == uw.shape) || gw.dtype != uw.dtype) continue;
    Fusion f{n.op == Op::SwiGlu ? Op::MatMulSwiGlu : Op::MatMulGeGlu,
             {gm.inputs[0], gm.inputs[1], um.inputs[1]}};
    if (accept && !accept(f.op, dtypes_of(g, f.inputs))) continue;
    ++counts[n.op];
    fusions.emplace(i, std::move(f));
    absorbed[static_cast<size_t>(gate)] = true;
    absorbed[static_cast<size_t>(up)] = true;
  }
  if (fusions.empty()) return g;
  auto out = apply(g, fusions, absorbed);
  if (out)
    for (const auto& [op, count] : counts)
      log.fired.push_back(
          fmt::format("fuse_gate_up: {} {}(matmul, matmul) -> matmul_{}", count, op_name(op), op_name(op)));
  return out;
}

}  // namespace glass::graph
