#include "graph/ops/infer.h"

#include <fmt/format.h>

namespace glass::graph {

Error node_error(const InferArgs& a, const std::string& what) {
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("graph: node '{}' ({}): {}", a.label, op_name(a.node.op), what));
}

bool dims_equal(const Dim& x, const Dim& y) { return x == y; }

Result<TypeInfo> infer(const InferArgs& a) {
  switch (a.node.op) {
    case Op::Input:
    case Op::Parameter:
    case Op::State:
    case Op::Constant:
      return infer_leaf(a);
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::LessEqual:
    case Op::Where:
    case Op::Neg:
    case Op::Exp:
    case Op::Sqrt:
    case Op::Recip:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Log1p:
      return infer_elementwise(a);
    case Op::ReduceSum:
    case Op::ReduceMax:
      return infer_reduce(a);
    case Op::MatMul:
      return infer_matmul(a);
    case Op::Reshape:
    case Op::Permute:
    case Op::Slice:
    case Op::Concat:
    case Op::Gather:
    case Op::Cast:
    case Op::ScatterRows:
    case Op::GatherBlocks:
      return infer_layout(a);
    case Op::RmsNorm:
      return infer_norm(a);
    case Op::Rope:
      return infer_rope(a);
    case Op::Attention:
    case Op::KvWrite:
      return infer_attention(a);
    case Op::Silu:
    case Op::SwiGlu:
    case Op::Gelu:
    case Op::GeGlu:
    case Op::Softcap:
      return infer_activation(a);
    case Op::Embedding:
      return infer_embedding(a);
    case Op::Moe:
      return infer_moe(a);
    case Op::MatMulAdd:
    case Op::MatMulSwiGlu:
    case Op::MatMulGeGlu:
      return infer_fused_matmul(a);
    case Op::ShortConv:
      return infer_short_conv(a);
    case Op::DeltaNet:
    case Op::DeltaNetState:
      return infer_delta_net(a);
    case Op::kSentinel:
      break;
  }
  return node_error(a, "unknown op");
}

Tensor decompose(Builder& b, const Node& n, const std::vector<Tensor>& in, const Bindings& max) {
  switch (n.op) {
    case Op::RmsNorm:
      return decompose_rms_norm(b, n, in);
    case Op::Rope:
      return decompose_rope(b, n, in);
    case Op::Attention:
      return decompose_attention(b, n, in, max);
    case Op::KvWrite:
      return decompose_kv_write(b, n, in);
    case Op::Silu:
    case Op::SwiGlu:
    case Op::Gelu:
    case Op::GeGlu:
    case Op::Softcap:
      return decompose_activation(b, n, in);
    case Op::Embedding:
      return decompose_embedding(b, n, in);
    case Op::Moe:
      return decompose_moe(b, n, in);
    case Op::MatMulAdd:
    case Op::MatMulSwiGlu:
    case Op::MatMulGeGlu:
      return decompose_fused_matmul(b, n, in);
    case Op::ShortConv:
      return decompose_short_conv(b, n, in, max);
    default:
      break;
  }
  GLASS_CHECK(!"decompose called on a primitive");
  return {};
}

}  // namespace glass::graph
