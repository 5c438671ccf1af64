#pragma once
// Named graph rewrites. Each pass returns a new graph and appends what it changed to the log, so a
// user can ask what compilation did (`glass graph --after-rewrites`).
#include <functional>
#include <string>
#include <vector>

#include "glass/result.h"
#include "graph/graph.h"

namespace glass::graph {

struct RewriteLog {
  std::vector<std::string> fired;  // "<pass>: <what changed>"
};

// Replaces every composite node for which `lower(node)` is true by its reference decomposition.
Result<Graph> decompose_composites(const Graph& g, const std::function<bool(const Node&)>& lower,
                                   RewriteLog& log);

// Drops nodes that no output or state update depends on.
Result<Graph> eliminate_dead_nodes(const Graph& g, RewriteLog& log);

}  // namespace glass::graph
