#include "graph/rewrite.h"

#include <fmt/format.h>

#include "graph/builder.h"
#include "graph/ops/infer.h"

namespace glass::graph {
namespace {

// Rebuilds `g` node by node through a builder; `emit` decides how each node is reproduced.
Result<Graph> rebuild(const Graph& g, const std::vector<bool>& keep, const NodeEmitter& emit) {
  Builder b;
  std::vector<Tensor> map(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!keep[i]) continue;
    const Node& n = g.nodes[i];
    std::vector<Tensor> in;
    for (NodeId id : n.inputs) in.push_back(map[static_cast<size_t>(id)]);
    map[i] = emit(b, n, in);
    if (!b.ok()) break;
  }
  for (const Output& o : g.outputs) b.output(o.name, map[static_cast<size_t>(o.node)]);
  for (const StateUpdate& u : g.state_updates)
    b.update_state(map[static_cast<size_t>(u.state)], map[static_cast<size_t>(u.value)]);
  return b.finish();
}

}  // namespace

Tensor copy_node(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  std::vector<NodeId> ids;
  for (const Tensor& t : in) ids.push_back(t.id);
  return b.add_node(n.op, std::move(ids), n.attrs, n.shape, n.dtype, n.name);
}

Result<Graph> rewrite_nodes(const Graph& g, const NodeEmitter& emit) {
  return rebuild(g, std::vector<bool>(g.nodes.size(), true), emit);
}

Result<Graph> rewrite_nodes(const Graph& g, const std::vector<bool>& keep, const NodeEmitter& emit) {
  return rebuild(g, keep, emit);
}

Result<Graph> decompose_composites(const Graph& g, const std::function<bool(const Node&)>& lower,
                                   RewriteLog& log, const Bindings& max) {
  const std::vector<bool> all(g.nodes.size(), true);
  return rebuild(g, all, [&](Builder& b, const Node& n, const std::vector<Tensor>& in) {
    if (!is_composite(n.op) || !lower(n)) return copy_node(b, n, in);
    const Tensor out = decompose(b, n, in, max);
    if (b.ok()) {
      log.fired.push_back(fmt::format("decompose: {} '{}' into primitives", op_name(n.op), n.name));
      if (!n.name.empty()) out.named(n.name);
    }
    return out;
  });
}

Result<Graph> eliminate_dead_nodes(const Graph& g, RewriteLog& log) {
  std::vector<bool> live(g.nodes.size(), false);
  for (const Output& o : g.outputs) live[static_cast<size_t>(o.node)] = true;
  for (const StateUpdate& u : g.state_updates) {
    live[static_cast<size_t>(u.state)] = true;
    live[static_cast<size_t>(u.value)] = true;
  }
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (live[i])
      for (NodeId in : g.nodes[i].inputs) live[static_cast<size_t>(in)] = true;
  size_t dead = 0;
  for (bool l : live) dead += l ? 0 : 1;
  if (dead == 0) return g;
  log.fired.push_back(fmt::format("eliminate_dead_nodes: removed {} nodes", dead));
  return rebuild(g, live, copy_node);
}

}  // namespace glass::graph
