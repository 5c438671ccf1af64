#pragma once
// Versioned JSON form of a graph. Reading re-validates every node through the builder, and an
// unknown format or version is rejected. Compiled plans are never serialized.
#include <string>

#include "glass/result.h"
#include "graph/graph.h"

namespace glass::graph {

inline constexpr int kGraphFormatVersion = 2;  // 2: attention reads a paged cache through block tables

std::string to_json(const Graph& g, int indent = -1);
Result<Graph> from_json(const std::string& text);

}  // namespace glass::graph
