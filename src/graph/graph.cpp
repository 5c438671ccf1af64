#include "graph/graph.h"

#include "graph/serialize.h"

namespace glass::graph {

std::vector<NodeId> Graph::leaves(Op kind) const {
  std::vector<NodeId> out;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == kind) out.push_back(static_cast<NodeId>(i));
  return out;
}

NodeId Graph::find_leaf(Op kind, const std::string& name) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op == kind && nodes[i].name == name) return static_cast<NodeId>(i);
  return -1;
}

uint64_t Graph::hash() const {
  // FNV-1a over the canonical serialization: two graphs hash equal iff they serialize equal.
  const std::string text = to_json(*this);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace glass::graph
