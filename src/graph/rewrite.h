#pragma once
// Named graph rewrites. Each pass returns a new graph and appends what it changed to the log, so a
// user can ask what compilation did (`glass graph --after-rewrites`).
#include <functional>
#include <string>
#include <vector>

#include "glass/result.h"
#include "graph/builder.h"
#include "graph/graph.h"

namespace glass::graph {

struct RewriteLog {
  std::vector<std::string> fired;  // "<pass>: <what changed>"
};

// How a rewrite reproduces one node in the new graph: `in` are its inputs, already rewritten.
using NodeEmitter = std::function<Tensor(Builder& b, const Node& n, const std::vector<Tensor>& in)>;

// Rebuilds the graph node by node through `emit` (outputs and state updates follow their nodes).
// Every node is re-validated, so a rewrite cannot produce an ill-typed graph.
Result<Graph> rewrite_nodes(const Graph& g, const NodeEmitter& emit);
// The same, dropping the nodes whose `keep` is false (no kept node may read them through `in`).
Result<Graph> rewrite_nodes(const Graph& g, const std::vector<bool>& keep, const NodeEmitter& emit);

// Reproduces `n` unchanged on the rewritten inputs: the default case of an emitter.
Tensor copy_node(Builder& b, const Node& n, const std::vector<Tensor>& in);

// Replaces every composite node for which `lower(node)` is true by its reference decomposition.
// `max`: the symbols' bounds of the plan being compiled (attention's decomposition sizes its key
// positions by S's).
Result<Graph> decompose_composites(const Graph& g, const std::function<bool(const Node&)>& lower,
                                   RewriteLog& log, const Bindings& max = {});

// Drops nodes that no output or state update depends on.
Result<Graph> eliminate_dead_nodes(const Graph& g, RewriteLog& log);

}  // namespace glass::graph
