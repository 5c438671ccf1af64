#pragma once
// The cpu backend's kernel functions (the ISA-neutral halves; per-ISA routines arrive as the table
// entry's data). kernels.cpp maps (op, dtypes, ISA) to these.
#include "backend/cpu/kernel.h"

namespace glass::backend::ref {
struct KernelArgs;
}

namespace glass::backend::cpu::kernels {

// data: VecOps of the ISA
Status rms_norm(const KernelArgs& a);
Status swiglu(const KernelArgs& a);  // swiglu and silu
Status binary(const KernelArgs& a);  // add and mul, numpy broadcasting
Status attention(const KernelArgs& a);
size_t attention_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                         const KernelData& data);

// Mixture of experts: data is the MoeKernel of the ISA (its matmul routines and VecOps).
struct VecOps;
struct MoeKernel {
  Isa isa;
  const VecOps* ops;
};
const MoeKernel& moe_kernel(Isa isa);
Status moe(const KernelArgs& a);
size_t moe_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                   const KernelData& data);

// ISA-neutral
Status rope(const KernelArgs& a);  // prepared: the rotation's base frequencies
std::vector<float> rope_prepare(const graph::Node& n);
size_t rope_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                    const KernelData& data);
Status embedding(const KernelArgs& a);
// An embedding whose table is also a repacked matmul weight (a tied output projection) reads the
// repacked copy: data is the layout's MatmulKernel (its unpack_row), scratch one row per thread.
Status embedding_repacked(const KernelArgs& a);
size_t embedding_repacked_scratch(size_t row_bytes, int threads);
Status tanh_activation(const KernelArgs& a);  // gelu, geglu (tanh form) and softcap
Status short_conv(const KernelArgs& a);
// data: VecOps of the ISA. delta_net and delta_net_state (in place over the state pool); the
// fused form runs delta_net and writes the states its delta_net_state would.
Status delta_net(const KernelArgs& a);
Status delta_net_writing_states(const KernelArgs& a);
size_t delta_net_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                         const KernelData& data);

// The ref backend's kernel for the primitives the cpu backend does not specialise (layout, casts,
// the remaining elementwise ops, reductions, row writes): data is a RefKernel.
struct RefKernel {
  Status (*fn)(const ref::KernelArgs& a);
};
Status ref_kernel(const KernelArgs& a);
extern const RefKernel kRefElementwise, kRefReduce, kRefCopyLayout, kRefGather, kRefCast, kRefWriteRows,
    kRefGatherBlocks;

}  // namespace glass::backend::cpu::kernels
