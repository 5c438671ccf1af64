// Elementwise ops with numpy broadcasting: shapes are right-aligned and each pair of dimensions is
// equal (the same constant or the same symbol) or one of them is the constant 1.
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {
namespace {

std::optional<Shape> broadcast(const Shape& x, const Shape& y) {
  const size_t rank = std::max(x.size(), y.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim one = Dim::constant(1);
    const Dim dx = i < rank - x.size() ? one : x[i - (rank - x.size())];
    const Dim dy = i < rank - y.size() ? one : y[i - (rank - y.size())];
    if (dx == dy || dy == one) {
      out[i] = dx;
    } else if (dx == one) {
      out[i] = dy;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

Result<TypeInfo> infer_elementwise(const InferArgs& a) {
  const Op op = a.node.op;
  const size_t arity =
      op == Op::Where                                                                             ? 3
      : (op == Op::Add || op == Op::Sub || op == Op::Mul || op == Op::Div || op == Op::LessEqual) ? 2
                                                                                                  : 1;
  if (a.inputs.size() != arity)
    return node_error(a, fmt::format("expects {} inputs, got {}", arity, a.inputs.size()));
  Shape shape = a.inputs[0]->shape;
  for (const Node* in : a.inputs) {
    if (in->dtype != DType::F32)
      return node_error(a, fmt::format("operands must be f32, got {}", dtype_name(in->dtype)));
    auto b = broadcast(shape, in->shape);
    if (!b)
      return node_error(a, fmt::format("shapes {} and {} do not broadcast", shape_to_string(shape),
                                       shape_to_string(in->shape)));
    shape = *b;
  }
  return TypeInfo{shape, DType::F32};
}

Result<TypeInfo> infer_reduce(const InferArgs& a) {
  if (a.inputs.size() != 1) return node_error(a, "expects 1 input");
  const Node& x = *a.inputs[0];
  if (x.dtype != DType::F32) return node_error(a, "operand must be f32");
  if (x.shape.empty()) return node_error(a, "cannot reduce a rank-0 tensor");
  Shape s(x.shape.begin(), x.shape.end() - 1);
  s.push_back(Dim::constant(1));
  return TypeInfo{s, DType::F32};
}

}  // namespace glass::graph
