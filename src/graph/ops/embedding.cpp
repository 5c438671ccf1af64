// embedding(table [V, D], ids [T]) -> [T, D] f32: the rows of the table, dequantized.
#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_embedding(const InferArgs& a) {
  if (a.inputs.size() != 2) return node_error(a, "expects (table, ids)");
  const Node& table = *a.inputs[0];
  const Node& ids = *a.inputs[1];
  if (table.shape.size() != 2 || table.shape[1].is_symbolic()) return node_error(a, "table must be [V, D]");
  if (ids.dtype != DType::I32 || ids.shape.size() != 1) return node_error(a, "ids must be i32 [T]");
  if (table.dtype == DType::I32 || table.dtype == DType::I8) return node_error(a, "table cannot be integer");
  return TypeInfo{Shape{ids.shape[0], table.shape[1]}, DType::F32};
}

Tensor decompose_embedding(Builder& b, const Node& /*n*/, const std::vector<Tensor>& in) {
  const Tensor rows = b.gather(in[0], in[1]);
  return rows.dtype() == DType::F32 ? rows : b.cast(rows, DType::F32);
}

}  // namespace glass::graph
