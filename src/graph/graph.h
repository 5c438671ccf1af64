#pragma once
// The graph IR: a list of nodes in topological order, each producing one tensor. A graph is a
// value: builders create it, rewrites return new graphs, backends compile it into Plans.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/dtype.h"
#include "graph/op.h"
#include "graph/shape.h"

namespace glass::graph {

using NodeId = int32_t;

struct Node {
  Op op = Op::Input;
  std::vector<NodeId> inputs;
  Attrs attrs;
  Shape shape;
  DType dtype = DType::F32;
  std::string name;  // e.g. "blk.3.attn_norm"; leaves use their bound name
};

// A state tensor is replaced by a new value each step; backends perform the update in place.
struct StateUpdate {
  NodeId state = -1;
  NodeId value = -1;
};

struct Output {
  std::string name;
  NodeId node = -1;
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<Output> outputs;
  std::vector<StateUpdate> state_updates;

  const Node& node(NodeId id) const { return nodes.at(static_cast<size_t>(id)); }
  // Leaves of one kind, in node order.
  std::vector<NodeId> leaves(Op kind) const;
  NodeId find_leaf(Op kind, const std::string& name) const;  // -1 when absent
  // Content hash of ops, attributes, shapes, dtypes, edges and outputs (not of weight data).
  uint64_t hash() const;
};

}  // namespace glass::graph
