#pragma once
// Fused matmuls (graph/ops/fused_matmul.cpp): the product's tiles are computed into per-thread
// scratch with the weight type's MatmulKernel and the same work split as matmul, and an epilogue
// consumes each tile while it is hot: matmul_add adds the residual, matmul_swiglu / matmul_geglu
// compute the gate and up tiles of the same weight rows and write act(gate) * up. No [T, N]
// intermediate exists.
#include "backend/cpu/kernel.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/vec_ops.h"

namespace glass::backend::cpu::kernels {

struct FusedMatmulKernel {
  const MatmulKernel* mk;
  const VecOps* ops;
};

// The fused kernel of a row of the tier's matmul table (matmul.h) with the tier's VecOps: one
// immutable entry per (tier, row), made on first use; nullptr when mk is not a row of the tier's table.
const FusedMatmulKernel* fused_matmul_kernel(Isa isa, const MatmulKernel* mk);

// The kernel-table functions (data: a FusedMatmulKernel).
Status matmul_add(const KernelArgs& a);  // out may share the residual's buffer (input 2)
Status matmul_glu(const KernelArgs& a);  // matmul_swiglu and matmul_geglu
size_t fused_matmul_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                            int threads, const KernelData& data);
InputConversion fused_matmul_conversion(const graph::Graph& g, const graph::Node& n,
                                        const graph::Bindings& max, const KernelData& data);

}  // namespace glass::backend::cpu::kernels
