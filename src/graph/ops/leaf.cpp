// Leaves: step inputs, parameters (weights) and state are declared with their shape and dtype;
// constants carry their values.
#include <fmt/format.h>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_leaf(const InferArgs& a) {
  const Node& n = a.node;
  if (!a.inputs.empty()) return node_error(a, "a leaf takes no inputs");
  if (n.shape.size() > static_cast<size_t>(kMaxRank))
    return node_error(a, fmt::format("rank {} exceeds {}", n.shape.size(), kMaxRank));
  for (const Dim& d : n.shape)
    if (!d.is_symbolic() && d.value <= 0)
      return node_error(
          a, fmt::format("dimension {} in {} must be positive", d.value, shape_to_string(n.shape)));
  if (n.op == Op::Constant) {
    const auto* c = std::get_if<ConstantAttrs>(&n.attrs);
    if (c == nullptr) return node_error(a, "missing constant values");
    int64_t numel = 1;
    for (const Dim& d : n.shape) {
      if (d.is_symbolic()) return node_error(a, "a constant cannot have a symbolic shape");
      numel *= d.value;
    }
    if (numel != static_cast<int64_t>(c->values.size()))
      return node_error(a, fmt::format("{} values for shape {}", c->values.size(), shape_to_string(n.shape)));
    return TypeInfo{n.shape, DType::F32};
  }
  if (std::get_if<LeafAttrs>(&n.attrs) == nullptr || n.name.empty())
    return node_error(a, "a leaf needs a name");
  return TypeInfo{n.shape, n.dtype};
}

}  // namespace glass::graph
