// Layout and data movement: reshape, permute, slice, concat, gather, cast and scatter_rows.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "graph/ops/infer.h"

namespace glass::graph {
namespace {

// A shape's element count as (product of constants, multiset of symbols), so reshapes between
// symbolic shapes can be checked without binding the symbols.
struct SymbolicCount {
  int64_t constant = 1;
  std::map<Sym, int> symbols;
  bool operator==(const SymbolicCount&) const = default;
};

SymbolicCount count(const Shape& s) {
  SymbolicCount c;
  for (const Dim& d : s) {
    if (d.is_symbolic()) {
      c.symbols[d.sym]++;
    } else {
      c.constant *= d.value;
    }
  }
  return c;
}

Result<TypeInfo> infer_reshape(const InferArgs& a) {
  const Node& x = *a.inputs[0];
  if (traits(x.dtype).quantized) return node_error(a, "cannot reshape quantized blocks");
  if (a.node.shape.size() > static_cast<size_t>(kMaxRank)) return node_error(a, "target rank exceeds 4");
  if (!(count(x.shape) == count(a.node.shape)))
    return node_error(
        a, fmt::format("cannot reshape {} to {}", shape_to_string(x.shape), shape_to_string(a.node.shape)));
  return TypeInfo{a.node.shape, x.dtype};
}

Result<TypeInfo> infer_permute(const InferArgs& a) {
  const Node& x = *a.inputs[0];
  const auto* p = std::get_if<PermuteAttrs>(&a.node.attrs);
  if (p == nullptr || p->perm.size() != x.shape.size())
    return node_error(a, "permutation rank differs from input rank");
  std::vector<int> sorted = p->perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int>(i)) return node_error(a, "not a permutation");
  if (traits(x.dtype).quantized) return node_error(a, "cannot permute quantized blocks");
  Shape out;
  for (int axis : p->perm) out.push_back(x.shape[static_cast<size_t>(axis)]);
  return TypeInfo{out, x.dtype};
}

Result<TypeInfo> infer_slice(const InferArgs& a) {
  const Node& x = *a.inputs[0];
  const auto* s = std::get_if<SliceAttrs>(&a.node.attrs);
  if (s == nullptr || s->axis < 0 || s->axis >= static_cast<int>(x.shape.size()))
    return node_error(a, "bad slice axis");
  const Dim& d = x.shape[static_cast<size_t>(s->axis)];
  if (s->start < 0) return node_error(a, "negative slice start");
  if (!s->length.is_symbolic() && s->length.value <= 0) return node_error(a, "slice length must be positive");
  if (!d.is_symbolic() && !s->length.is_symbolic() && s->start + s->length.value > d.value)
    return node_error(
        a, fmt::format("slice [{}, {}) past dimension {}", s->start, s->start + s->length.value, d.value));
  if (d.is_symbolic() && !(s->start == 0 && s->length == d))
    return node_error(a, "a symbolic dimension can only be sliced whole");
  if (s->axis == static_cast<int>(x.shape.size()) - 1 && traits(x.dtype).quantized)
    return node_error(a, "cannot slice inside quantized blocks");
  Shape out = x.shape;
  out[static_cast<size_t>(s->axis)] = s->length;
  return TypeInfo{out, x.dtype};
}

Result<TypeInfo> infer_concat(const InferArgs& a) {
  const Node& x = *a.inputs[0];
  const Node& y = *a.inputs[1];
  const auto* c = std::get_if<ConcatAttrs>(&a.node.attrs);
  if (c == nullptr || c->axis < 0 || c->axis >= static_cast<int>(x.shape.size()))
    return node_error(a, "bad concat axis");
  if (x.dtype != y.dtype || x.shape.size() != y.shape.size())
    return node_error(a, "operands differ in dtype or rank");
  Shape out = x.shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (static_cast<int>(i) == c->axis) {
      if (x.shape[i].is_symbolic() || y.shape[i].is_symbolic())
        return node_error(a, "cannot concat symbolic dims");
      out[i] = Dim::constant(x.shape[i].value + y.shape[i].value);
    } else if (!(x.shape[i] == y.shape[i])) {
      return node_error(a, fmt::format("shapes {} and {} differ off the concat axis",
                                       shape_to_string(x.shape), shape_to_string(y.shape)));
    }
  }
  return TypeInfo{out, x.dtype};
}

Result<TypeInfo> infer_gather(const InferArgs& a) {
  const Node& table = *a.inputs[0];
  const Node& ids = *a.inputs[1];
  if (table.shape.size() != 2) return node_error(a, "table must be [rows, cols]");
  if (ids.dtype != DType::I32 || ids.shape.size() != 1) return node_error(a, "ids must be i32 [n]");
  return TypeInfo{Shape{ids.shape[0], table.shape[1]}, table.dtype};
}

// gather_blocks(cache [C, ...], block_table [N, max_blocks] i32, seq [T] i32) -> [T, len, ...]: row j
// of token t is cache row block_table[seq[t], j / block_size] * block_size + j % block_size; rows
// whose block entry is outside the table or the cache read as zeros.
Result<TypeInfo> infer_gather_blocks(const InferArgs& a) {
  const Node& cache = *a.inputs[0];
  const Node& table = *a.inputs[1];
  const Node& seq = *a.inputs[2];
  const auto& attrs = std::get<BlockGatherAttrs>(a.node.attrs);
  if (cache.shape.empty() || cache.shape.size() + 1 > static_cast<size_t>(kMaxRank))
    return node_error(a, "cache must be [C, ...] of rank 1 to 3");
  if (traits(cache.dtype).quantized) return node_error(a, "cache cannot be quantized");
  if (table.dtype != DType::I32 || table.shape.size() != 2)
    return node_error(a, "block_table must be i32 [N, B]");
  if (seq.dtype != DType::I32 || seq.shape.size() != 1) return node_error(a, "seq must be i32 [T]");
  if (attrs.block_size <= 0) return node_error(a, "block_size must be positive");
  Shape out{seq.shape[0], attrs.len};
  for (size_t i = 1; i < cache.shape.size(); ++i) out.push_back(cache.shape[i]);
  return TypeInfo{out, cache.dtype};
}

Result<TypeInfo> infer_cast(const InferArgs& a) {
  const DType from = a.inputs[0]->dtype;
  const DType to = a.node.dtype;
  const bool ok = (to == DType::F32 && from != DType::I8) ||
                  ((to == DType::F16 || to == DType::BF16) && (from == DType::F32 || from == to));
  if (!ok) return node_error(a, fmt::format("no cast from {} to {}", dtype_name(from), dtype_name(to)));
  return TypeInfo{a.inputs[0]->shape, to};
}

}  // namespace

// scatter_rows(state [C, ...], rows [T, ...], slots [T]) and kv_write share these checks.
Result<TypeInfo> infer_row_write(const InferArgs& a, bool allow_convert) {
  if (a.inputs.size() != 3) return node_error(a, "expects (state, rows, slots)");
  const Node& st = *a.inputs[0];
  const Node& rows = *a.inputs[1];
  const Node& slots = *a.inputs[2];
  if (st.shape.size() != rows.shape.size() || st.shape.empty())
    return node_error(a, fmt::format("state {} and rows {} differ in rank", shape_to_string(st.shape),
                                     shape_to_string(rows.shape)));
  for (size_t i = 1; i < st.shape.size(); ++i)
    if (!(st.shape[i] == rows.shape[i]))
      return node_error(a, fmt::format("row shape of {} differs from state {}", shape_to_string(rows.shape),
                                       shape_to_string(st.shape)));
  if (slots.dtype != DType::I32 || slots.shape.size() != 1 || !(slots.shape[0] == rows.shape[0]))
    return node_error(a, "slots must be i32 [rows]");
  if (traits(st.dtype).quantized) return node_error(a, "state cannot be quantized");
  if (!allow_convert && rows.dtype != st.dtype)
    return node_error(
        a, fmt::format("rows are {} but state is {}", dtype_name(rows.dtype), dtype_name(st.dtype)));
  return TypeInfo{st.shape, st.dtype};
}

Result<TypeInfo> infer_layout(const InferArgs& a) {
  const size_t want = a.node.op == Op::Concat || a.node.op == Op::Gather              ? 2
                      : a.node.op == Op::ScatterRows || a.node.op == Op::GatherBlocks ? 3
                                                                                      : 1;
  if (a.inputs.size() != want)
    return node_error(a, fmt::format("expects {} inputs, got {}", want, a.inputs.size()));
  switch (a.node.op) {
    case Op::Reshape:
      return infer_reshape(a);
    case Op::Permute:
      return infer_permute(a);
    case Op::Slice:
      return infer_slice(a);
    case Op::Concat:
      return infer_concat(a);
    case Op::Gather:
      return infer_gather(a);
    case Op::Cast:
      return infer_cast(a);
    case Op::ScatterRows:
      return infer_row_write(a, false);
    case Op::GatherBlocks:
      return infer_gather_blocks(a);
    default:
      return node_error(a, "not a layout op");
  }
}

}  // namespace glass::graph
