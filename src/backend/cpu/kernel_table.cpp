// The cpu backend's kernel table: (op, operand dtypes, ISA) -> kernel, and for matmuls the row of the
// matmul table the decode strategy reads. Plan compilation asks here once per node and takes the
// entry of the highest ISA the backend runs; a miss is a compile-time error naming the op and dtypes
// ("cpu: no kernel for matmul(f32, q4_k)"). The table also decides which composite ops stay fused:
// lower_for decomposes only composites without an entry.
#include "backend/cpu/kernel_table.h"

#include <fmt/format.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_fused.h"
#include "backend/cpu/kernels/vec_ops.h"
#include "backend/dtype_sets.h"

namespace glass::backend::cpu {
namespace {

using graph::DType;
using graph::Op;
namespace k = kernels;

struct Entry {
  Op op;
  std::vector<DTypeSet> operands;
  Isa isa;
  KernelFn fn;
  KernelData data;
  ScratchFn scratch = nullptr;
  PrepareFn prepare = nullptr;
  bool in_place = false;
  const char* note = "";
  ConvertFn convert = nullptr;
  uint8_t in_place_input = 0;
};

std::vector<Entry> build_table() {
  std::vector<Entry> t;
  for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    for (int w = 0; w < static_cast<int>(DType::kSentinel); ++w) {
      const auto wt = static_cast<DType>(w);
      if ((kWeights & bit(wt)) == 0) continue;
      if (const k::MatmulKernel* mk = k::matmul_kernel_for(isa, wt))
        t.push_back({Op::MatMul,
                     {kF32, bit(wt)},
                     isa,
                     k::matmul,
                     mk,
                     k::matmul_scratch,
                     nullptr,
                     false,
                     "",
                     k::matmul_conversion});
    }
    const k::VecOps* ops = &k::vec_ops_for(isa);
    for (int w = 0; w < static_cast<int>(DType::kSentinel); ++w) {
      const auto wt = static_cast<DType>(w);
      if ((kWeights & bit(wt)) == 0) continue;
      const k::MatmulKernel* mk = k::matmul_kernel_for(isa, wt);
      if (mk == nullptr) continue;
      const k::FusedMatmulKernel* fk = k::fused_matmul_kernel(isa, mk);
      if (fk == nullptr) continue;  // every row of the tier has one (matmul_fused.h)
      // The residual's buffer may become the output (input 2).
      t.push_back({Op::MatMulAdd,
                   {kF32, bit(wt), kF32},
                   isa,
                   k::matmul_add,
                   fk,
                   k::fused_matmul_scratch,
                   nullptr,
                   true,
                   "",
                   k::fused_matmul_conversion,
                   2});
      for (Op op : {Op::MatMulSwiGlu, Op::MatMulGeGlu})
        t.push_back({op,
                     {kF32, bit(wt), bit(wt)},
                     isa,
                     k::matmul_glu,
                     fk,
                     k::fused_matmul_scratch,
                     nullptr,
                     false,
                     "",
                     k::fused_matmul_conversion});
    }
    // Plain; with Gemma 4's per-expert scale; with gpt-oss's expert biases.
    for (const auto& operands :
         {std::vector<DTypeSet>{kF32, kF32, kWeights, kWeights, kWeights},
          std::vector<DTypeSet>{kF32, kF32, kWeights, kWeights, kWeights, kF32},
          std::vector<DTypeSet>{kF32, kF32, kWeights, kWeights, kWeights, kF32, kF32, kF32}})
      t.push_back({Op::Moe, operands, isa, k::moe, &k::moe_kernel(isa), k::moe_scratch});
    if (isa == Isa::Avx512Bf16) continue;  // its row ops are the avx512 tier's
    t.push_back({Op::RmsNorm, {kF32, kF32}, isa, k::rms_norm, ops, nullptr, nullptr, true});
    t.push_back({Op::SwiGlu, {kF32, kF32}, isa, k::swiglu, ops, nullptr, nullptr, true});
    t.push_back({Op::Silu, {kF32}, isa, k::swiglu, ops, nullptr, nullptr, true});
    t.push_back({Op::Add, {kF32, kF32}, isa, k::binary, ops, nullptr, nullptr, true});
    t.push_back({Op::Mul, {kF32, kF32}, isa, k::binary, ops, nullptr, nullptr, true});
    t.push_back(
        {Op::Attention, {kF32, kKv, kKv, kI32, kI32, kI32}, isa, k::attention, ops, k::attention_scratch});
    t.push_back({Op::Attention,
                 {kF32, kKv, kKv, kI32, kI32, kI32, kF32},
                 isa,
                 k::attention,
                 ops,
                 k::attention_scratch});
    t.push_back({Op::DeltaNet,
                 {kF32, kF32, kF32, kF32, kF32, kF32, kI32, kI32},
                 isa,
                 k::delta_net,
                 ops,
                 k::delta_net_scratch});
    t.push_back({Op::DeltaNetState,
                 {kF32, kF32, kF32, kF32, kF32, kI32, kI32, kF32},
                 isa,
                 k::delta_net,
                 ops,
                 k::delta_net_scratch});
  }
  const Isa s = Isa::Scalar;
  t.push_back({Op::Rope, {kF32, kI32}, s, k::rope, {}, k::rope_scratch, k::rope_prepare, true});
  t.push_back({Op::Rope, {kF32, kI32, kF32}, s, k::rope, {}, k::rope_scratch, k::rope_prepare, true});
  t.push_back({Op::Embedding, {kWeights, kI32}, s, k::embedding});
  t.push_back({Op::Gelu, {kF32}, s, k::tanh_activation, {}, nullptr, nullptr, true});
  t.push_back({Op::GeGlu, {kF32, kF32}, s, k::tanh_activation, {}, nullptr, nullptr, true});
  t.push_back({Op::Softcap, {kF32}, s, k::tanh_activation, {}, nullptr, nullptr, true});
  t.push_back({Op::ShortConv, {kF32, kF32, kI32, kI32, kI32}, s, k::short_conv});

  t.push_back({Op::Reshape, {kPlain}, s, nullptr});  // aliases its input: no kernel runs
  // Primitives off every supported model's hot path: the ref kernels, on the calling thread.
  auto ref = [&](Op op, std::vector<DTypeSet> operands, const k::RefKernel& fn) {
    t.push_back({op, std::move(operands), s, k::ref_kernel, &fn, nullptr, nullptr, false, " (ref)"});
  };
  ref(Op::KvWrite, {kKv | kI32, kF32 | kI32, kI32}, k::kRefWriteRows);
  ref(Op::ScatterRows, {kKv | kI32, kKv | kI32, kI32}, k::kRefWriteRows);
  for (Op op : {Op::Sub, Op::Div, Op::LessEqual}) ref(op, {kF32, kF32}, k::kRefElementwise);
  ref(Op::Where, {kF32, kF32, kF32}, k::kRefElementwise);
  for (Op op : {Op::Neg, Op::Exp, Op::Sqrt, Op::Recip, Op::Sin, Op::Cos, Op::Tanh, Op::Log1p})
    ref(op, {kF32}, k::kRefElementwise);
  ref(Op::ReduceSum, {kF32}, k::kRefReduce);
  ref(Op::ReduceMax, {kF32}, k::kRefReduce);
  ref(Op::Permute, {kPlain}, k::kRefCopyLayout);
  ref(Op::Slice, {kPlain}, k::kRefCopyLayout);
  ref(Op::Concat, {kPlain, kPlain}, k::kRefCopyLayout);
  ref(Op::Gather, {kWeights, kI32}, k::kRefGather);
  ref(Op::GatherBlocks, {kKv | kI32, kI32, kI32}, k::kRefGatherBlocks);
  ref(Op::Cast, {kWeights | kI32}, k::kRefCast);
  return t;
}

const std::vector<Entry>& table() {
  static const std::vector<Entry> kTable = build_table();
  return kTable;
}

const Entry* best_entry(graph::Op op, const std::vector<DType>& operands, Isa max_isa) {
  const Entry* best = nullptr;
  for (const Entry& e : table()) {
    if (e.op != op || e.operands.size() != operands.size() || e.isa > max_isa) continue;
    bool match = true;
    for (size_t i = 0; i < operands.size(); ++i) match = match && (e.operands[i] & bit(operands[i])) != 0;
    if (match && (best == nullptr || e.isa > best->isa)) best = &e;
  }
  return best;
}

bool is_matmul(Op op) {
  return op == Op::MatMul || op == Op::MatMulAdd || op == Op::MatMulSwiGlu || op == Op::MatMulGeGlu;
}

// A matmul's row: the decode strategy's kernel for the weight type at the entry's tier (the file
// layout's when the strategy names none), repacked only where the query allows it and every weight
// is a 2-D parameter (a copy can be made once), never for F16/BF16 under batch invariance; and the
// fused entry of that row for a fused matmul.
Status choose_matmul_row(const graph::Graph& g, const graph::Node& n, const KernelQuery& q, KernelChoice& c) {
  const bool fused = n.op != Op::MatMul;
  const k::MatmulKernel& file =
      fused ? *data_of<k::FusedMatmulKernel>(c.data).mk : data_of<k::MatmulKernel>(c.data);
  const k::MatmulKernel* walk = k::decode_matmul_kernel(c.isa, file.weight, q.strategy);
  if (walk == nullptr || walk == &file) return {};
  if (walk->repack == nullptr) {  // the strategy's own file-layout kernel: under --no-repack too
    if (walk->act != file.act || walk->quantize != file.quantize)
      return make_error(ErrorCode::Internal,
                        fmt::format("cpu: {}: the {} strategy's kernel converts activations unlike the file "
                                    "layout's",
                                    kernel_signature(g, n), decode_strategy_name(q.strategy)));
  } else {
    if (!q.repack) return {};
    if (q.batch_invariant && (file.weight == DType::F16 || file.weight == DType::BF16)) return {};
    const size_t n_weights = n.op == Op::MatMulSwiGlu || n.op == Op::MatMulGeGlu ? 2 : 1;
    for (size_t j = 1; j <= n_weights; ++j) {
      const graph::Node& w = g.node(n.inputs[j]);
      if (w.op != Op::Parameter || w.shape.size() != 2) return {};  // nothing in the file to copy once
    }
    c.repack = walk;
  }
  if (!fused) {
    c.data = walk;
    return {};
  }
  const k::FusedMatmulKernel* fk = k::fused_matmul_kernel(c.isa, walk);
  if (fk == nullptr)
    return make_error(
        ErrorCode::Internal,
        fmt::format("cpu: {}: the {} {} kernel is not in the {} matmul table", kernel_signature(g, n),
                    graph::dtype_name(walk->weight), walk->layout, isa_name(c.isa)));
  c.data = fk;
  return {};
}

}  // namespace

Result<KernelChoice> choose_kernel(const graph::Graph& g, const graph::Node& n, const KernelQuery& q) {
  std::vector<DType> operands;
  for (graph::NodeId in : n.inputs) operands.push_back(g.node(in).dtype);
  const Entry* best = best_entry(n.op, operands, q.max_isa);
  if (best == nullptr)
    return make_error(ErrorCode::Unsupported, fmt::format("cpu: no kernel for {}", kernel_signature(g, n)));
  KernelChoice c;
  c.fn = best->fn;
  c.data = c.base = best->data;
  c.scratch = best->scratch;
  c.prepare = best->prepare;
  c.convert = best->convert;
  c.in_place = best->in_place;
  c.isa = best->isa;
  c.in_place_input = best->in_place_input;
  if (is_matmul(n.op))
    if (Status st = choose_matmul_row(g, n, q, c); !st) return st.error();
  return c;
}

bool has_kernel(graph::Op op, const std::vector<DType>& operands, Isa max_isa) {
  return best_entry(op, operands, max_isa) != nullptr;
}

std::vector<std::string> kernel_table_lines() {
  std::vector<std::string> lines;
  for (const Entry& e : table()) {
    std::vector<std::string> ops;
    for (DTypeSet s : e.operands) ops.push_back(dtype_set_name(s));
    lines.push_back(
        fmt::format("{}({}) {}{}", graph::op_name(e.op), fmt::join(ops, ", "), isa_name(e.isa), e.note));
  }
  // The matmul table's rows: the layouts a plan repacks weights into at load, and their walks; the
  // file-layout kernels a decode strategy runs instead of the default's.
  for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
    for (const k::MatmulRow& r : k::matmul_rows(isa)) {
      if (r.kernel->repack == nullptr && r.walks == k::kEveryWalk) continue;
      const std::string walks = k::walks_name(r.walks);
      lines.push_back(
          fmt::format("matmul(f32, {}) {} {}{}{}", graph::dtype_name(r.kernel->weight), isa_name(isa),
                      r.kernel->repack != nullptr ? fmt::format("repacked to {}", r.kernel->layout)
                                                  : std::string("in the file's layout"),
                      walks.empty() ? "" : ", decode walk ", walks));
    }
  return lines;
}

}  // namespace glass::backend::cpu
