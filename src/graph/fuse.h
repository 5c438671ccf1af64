#pragma once
// Fusion rewrites: named graph passes that merge a matmul with what consumes it into one fused
// composite (graph/ops/fused_matmul.cpp), so a backend with a kernel for it computes both in one pass
// over the weights. Each logs one aggregated line ("fuse_matmul_residual: 60 add(matmul) ->
// matmul_add") when it fires. `accept` says whether the backend runs the fused node (it sees the
// op and the operand dtypes: x, then the weights, then the residual).
#include <functional>
#include <vector>

#include "graph/rewrite.h"

namespace glass::graph {

using FusionFilter = std::function<bool(Op fused, const std::vector<DType>& operands)>;

// add(r, matmul(x, w)) in either operand order -> matmul_add(x, w, r), when the matmul has no
// other reader, w is 2-D and r has the sum's shape (no broadcasting).
Result<Graph> fuse_matmul_residual(const Graph& g, const FusionFilter& accept, RewriteLog& log);

// swiglu / geglu(matmul(x, w_gate), matmul(x, w_up)) with one x, single-reader matmuls and 2-D
// weights of one shape and dtype -> matmul_swiglu / matmul_geglu(x, w_gate, w_up).
Result<Graph> fuse_gate_up(const Graph& g, const FusionFilter& accept, RewriteLog& log);

}  // namespace glass::graph
