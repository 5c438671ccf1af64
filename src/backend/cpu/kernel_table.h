#pragma once
// The cpu backend's one kernel table: (op, operand dtypes, layout, ISA tier, decode walk) -> a typed
// kernel. A plan asks it once per node (choose_kernel) and runs what it says: for a matmul the row
// of the matmul table (kernels/matmul.h) its decode strategy reads, repacked or in the file's
// layout, and the fused entry of that row for a fused matmul. `glass kernels` prints it.
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/kernel.h"

namespace glass::backend::cpu {

// What a plan asks the table with.
struct KernelQuery {
  Isa max_isa = Isa::Scalar;  // the highest tier the backend runs
  DecodeStrategy strategy = DecodeStrategy::Spread;
  bool repack = true;            // rows in a repacked layout may be chosen (BackendOptions::repack_weights)
  bool batch_invariant = false;  // F16/BF16 keep the file layout (the 16-row one sums k in another order)
};

// The kernel for `n`. Errors: Unsupported naming the op and operand types where the table has no
// entry; Internal where the matmul table is inconsistent.
Result<KernelChoice> choose_kernel(const graph::Graph& g, const graph::Node& n, const KernelQuery& q);
// Whether an entry exists for the op and operand dtypes (a node not built yet: fusion rewrites).
bool has_kernel(graph::Op op, const std::vector<graph::DType>& operands, Isa max_isa);
// One "op(dtypes) isa" line per entry, and the matmul table's repacked layouts and walks.
std::vector<std::string> kernel_table_lines();

}  // namespace glass::backend::cpu
