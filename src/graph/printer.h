#pragma once
// Human-readable views of a graph: one line per node (op, inputs, attributes, shape, dtype, name)
// and Graphviz DOT.
#include <string>

#include "graph/graph.h"

namespace glass::graph {

std::string attrs_to_string(const Attrs& attrs);
std::string to_text(const Graph& g);
std::string to_dot(const Graph& g);

}  // namespace glass::graph
