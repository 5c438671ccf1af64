#pragma once
// Every operation a graph can hold. Leaves bring data in (step inputs, weights, state, constants);
// primitives are the small set every backend must run; composites are larger ops with a reference
// decomposition into primitives (graph/ops/*.cpp) that faster backends replace by fused kernels.
#include <cstdint>
#include <optional>
#include <string_view>

namespace glass::graph {

enum class Op : uint8_t {
  // leaves
  Input,
  Parameter,
  State,
  Constant,
  // elementwise primitives (numpy broadcasting)
  Add,
  Sub,
  Mul,
  Div,
  LessEqual,  // 1.0 where a <= b, else 0.0
  Where,      // cond != 0 ? a : b
  Neg,
  Exp,
  Sqrt,
  Recip,
  Sin,
  Cos,
  Tanh,
  Log1p,  // log(1 + x)
  // reductions over the last axis, keeping it as size 1
  ReduceSum,
  ReduceMax,
  // contraction: [..., M, K] x [..., N, K] -> [..., M, N] (the second operand is row-major "weights")
  MatMul,
  // layout and data movement
  Reshape,
  Permute,
  Slice,
  Concat,
  Gather,        // rows of a table by i32 ids
  Cast,          // includes dequantization
  ScatterRows,   // copy of a state with rows replaced at i32 slots (in place in backends)
  GatherBlocks,  // rows of a paged cache through a block table, per token's sequence
  // recurrences over each sequence's state slot (graph/ops/delta_net.cpp); sequential in the
  // tokens, so primitives: no decomposition
  DeltaNet,       // the gated delta rule's per-token outputs
  DeltaNetState,  // the state pool after the step (in place in backends)
  // composites
  RmsNorm,
  Rope,
  Attention,
  KvWrite,
  Silu,
  SwiGlu,
  Embedding,
  Moe,      // mixture-of-experts SwiGLU FFN with top-k routing (graph/ops/moe.cpp)
  Softcap,  // cap * tanh(x / cap)
  Gelu,     // tanh approximation
  GeGlu,    // gelu(gate) * up
  // fused composites, made by the fusion rewrites (graph/fuse.h), never by models
  MatMulAdd,     // matmul(x, w) + r
  MatMulSwiGlu,  // swiglu(matmul(x, w_gate), matmul(x, w_up))
  MatMulGeGlu,   // geglu(matmul(x, w_gate), matmul(x, w_up))
  // composites over a sequence's state
  ShortConv,  // causal depthwise convolution over a sequence's last positions (graph/ops/conv.cpp)
  kSentinel,
};

inline constexpr int kOpCount = static_cast<int>(Op::kSentinel);

std::string_view op_name(Op op);
std::optional<Op> op_from_name(std::string_view name);
bool is_leaf(Op op);
bool is_composite(Op op);

}  // namespace glass::graph
