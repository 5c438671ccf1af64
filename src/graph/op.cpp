#include "graph/op.h"

#include <array>

namespace glass::graph {
namespace {

struct OpRow {
  Op op;
  std::string_view name;
  bool leaf;
  bool composite;
};

constexpr std::array<OpRow, kOpCount> kOps = {{
    {Op::Input, "input", true, false},
    {Op::Parameter, "parameter", true, false},
    {Op::State, "state", true, false},
    {Op::Constant, "constant", true, false},
    {Op::Add, "add", false, false},
    {Op::Sub, "sub", false, false},
    {Op::Mul, "mul", false, false},
    {Op::Div, "div", false, false},
    {Op::LessEqual, "less_equal", false, false},
    {Op::Where, "where", false, false},
    {Op::Neg, "neg", false, false},
    {Op::Exp, "exp", false, false},
    {Op::Sqrt, "sqrt", false, false},
    {Op::Recip, "recip", false, false},
    {Op::Sin, "sin", false, false},
    {Op::Cos, "cos", false, false},
    {Op::Tanh, "tanh", false, false},
    {Op::Log1p, "log1p", false, false},
    {Op::ReduceSum, "reduce_sum", false, false},
    {Op::ReduceMax, "reduce_max", false, false},
    {Op::MatMul, "matmul", false, false},
    {Op::Reshape, "reshape", false, false},
    {Op::Permute, "permute", false, false},
    {Op::Slice, "slice", false, false},
    {Op::Concat, "concat", false, false},
    {Op::Gather, "gather", false, false},
    {Op::Cast, "cast", false, false},
    {Op::ScatterRows, "scatter_rows", false, false},
    {Op::GatherBlocks, "gather_blocks", false, false},
    {Op::DeltaNet, "delta_net", false, false},
    {Op::DeltaNetState, "delta_net_state", false, false},
    {Op::RmsNorm, "rms_norm", false, true},
    {Op::Rope, "rope", false, true},
    {Op::Attention, "attention", false, true},
    {Op::KvWrite, "kv_write", false, true},
    {Op::Silu, "silu", false, true},
    {Op::SwiGlu, "swiglu", false, true},
    {Op::Embedding, "embedding", false, true},
    {Op::Moe, "moe", false, true},
    {Op::Softcap, "softcap", false, true},
    {Op::Gelu, "gelu", false, true},
    {Op::GeGlu, "geglu", false, true},
    {Op::MatMulAdd, "matmul_add", false, true},
    {Op::MatMulSwiGlu, "matmul_swiglu", false, true},
    {Op::MatMulGeGlu, "matmul_geglu", false, true},
    {Op::ShortConv, "short_conv", false, true},
}};

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kOps rows must follow Op order");

}  // namespace

std::string_view op_name(Op op) { return kOps.at(static_cast<size_t>(op)).name; }
bool is_leaf(Op op) { return kOps.at(static_cast<size_t>(op)).leaf; }
bool is_composite(Op op) { return kOps.at(static_cast<size_t>(op)).composite; }

std::optional<Op> op_from_name(std::string_view name) {
  for (const auto& row : kOps)
    if (row.name == name) return row.op;
  return std::nullopt;
}

}  // namespace glass::graph
