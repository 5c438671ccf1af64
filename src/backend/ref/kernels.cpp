// The ref backend's kernel table: (op, operand dtypes) -> kernel. Plan compilation looks every node
// up here; a miss is a compile-time error naming the op and dtypes.
#include <fmt/format.h>

#include "backend/dtype_sets.h"
#include "backend/ref/kernel.h"

namespace glass::backend::ref {
namespace {

using graph::DType;
using graph::Op;

struct Entry {
  Op op;
  std::vector<DTypeSet> operands;
  KernelFn fn;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> kTable = {
      {Op::Add, {kF32, kF32}, elementwise},
      {Op::Sub, {kF32, kF32}, elementwise},
      {Op::Mul, {kF32, kF32}, elementwise},
      {Op::Div, {kF32, kF32}, elementwise},
      {Op::LessEqual, {kF32, kF32}, elementwise},
      {Op::Where, {kF32, kF32, kF32}, elementwise},
      {Op::Neg, {kF32}, elementwise},
      {Op::Exp, {kF32}, elementwise},
      {Op::Sqrt, {kF32}, elementwise},
      {Op::Recip, {kF32}, elementwise},
      {Op::Sin, {kF32}, elementwise},
      {Op::Cos, {kF32}, elementwise},
      {Op::Tanh, {kF32}, elementwise},
      {Op::Log1p, {kF32}, elementwise},
      {Op::ReduceSum, {kF32}, reduce},
      {Op::ReduceMax, {kF32}, reduce},
      {Op::MatMul, {kF32, kWeights}, matmul},
      {Op::Reshape, {kPlain}, nullptr},  // aliases its input: no kernel runs
      {Op::Permute, {kPlain}, copy_layout},
      {Op::Slice, {kPlain}, copy_layout},
      {Op::Concat, {kPlain, kPlain}, copy_layout},
      {Op::Gather, {kWeights, kI32}, gather},
      {Op::Cast, {kWeights | kI32}, cast},
      {Op::ScatterRows, {kKv | kI32, kKv | kI32, kI32}, write_rows},
      {Op::RmsNorm, {kF32, kF32}, rms_norm},
      {Op::Rope, {kF32, kI32}, rope},
      {Op::Rope, {kF32, kI32, kF32}, rope},
      {Op::Attention, {kF32, kKv, kKv, kI32, kI32, kI32}, attention},
      {Op::Attention, {kF32, kKv, kKv, kI32, kI32, kI32, kF32}, attention},
      {Op::GatherBlocks, {kKv | kI32, kI32, kI32}, gather_blocks},
      {Op::KvWrite, {kKv | kI32, kF32 | kI32, kI32}, write_rows},
      {Op::Silu, {kF32}, activation},
      {Op::SwiGlu, {kF32, kF32}, activation},
      {Op::Embedding, {kWeights, kI32}, embedding},
      {Op::Moe, {kF32, kF32, kWeights, kWeights, kWeights}, moe},
      {Op::Moe, {kF32, kF32, kWeights, kWeights, kWeights, kF32}, moe},
      {Op::Moe, {kF32, kF32, kWeights, kWeights, kWeights, kF32, kF32, kF32}, moe},
      {Op::Softcap, {kF32}, activation},
      {Op::Gelu, {kF32}, activation},
      {Op::GeGlu, {kF32, kF32}, activation},
      {Op::ShortConv, {kF32, kF32, kI32, kI32, kI32}, short_conv},
      {Op::DeltaNet, {kF32, kF32, kF32, kF32, kF32, kF32, kI32, kI32}, delta_net},
      {Op::DeltaNetState, {kF32, kF32, kF32, kF32, kF32, kI32, kI32, kF32}, delta_net},
  };
  return kTable;
}

const Entry* lookup(const graph::Graph& g, const graph::Node& n) {
  for (const Entry& e : table()) {
    if (e.op != n.op || e.operands.size() != n.inputs.size()) continue;
    bool match = true;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      match = match && (e.operands[i] & bit(g.node(n.inputs[i]).dtype)) != 0;
    if (match) return &e;
  }
  return nullptr;
}

Status no_kernel(const KernelArgs&) { return {}; }

}  // namespace

KernelFn find_kernel(const graph::Graph& g, const graph::Node& n) {
  const Entry* e = lookup(g, n);
  if (e == nullptr) return nullptr;
  return e->fn != nullptr ? e->fn : no_kernel;
}

std::vector<std::string> kernel_table_lines() {
  std::vector<std::string> lines;
  for (const Entry& e : table()) {
    std::vector<std::string> ops;
    for (DTypeSet s : e.operands) ops.push_back(dtype_set_name(s));
    lines.push_back(fmt::format("{}({})", graph::op_name(e.op), fmt::join(ops, ", ")));
  }
  return lines;
}

}  // namespace glass::backend::ref
