#include "backend/cpu/matmul_choice.h"

#include <fmt/format.h>

#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_fused.h"

namespace glass::backend::cpu {
namespace {

// The step's kernel entry for mk: mk itself, or its fused kernel for a fused matmul.
Result<const void*> entry_for(bool fused, Isa isa, const kernels::MatmulKernel* mk,
                              std::string_view signature) {
  if (!fused) return static_cast<const void*>(mk);
  const kernels::FusedMatmulKernel* fk = kernels::fused_matmul_kernel(isa, mk);
  if (fk == nullptr)
    return make_error(ErrorCode::Internal,
                      fmt::format("cpu: {}: the {} {} kernel is not in the {} matmul table", signature,
                                  graph::dtype_name(mk->weight), mk->layout, isa_name(isa)));
  return static_cast<const void*>(fk);
}

}  // namespace

Result<MatmulChoice> choose_matmul_kernel(const MatmulStep& step, const MatmulChoiceContext& ctx,
                                          std::string_view signature) {
  MatmulChoice c;
  c.kernel = step.kernel;
  for (size_t j = 0; j < step.n_weights; ++j) c.weights[j] = step.weights[j].data;
  const kernels::MatmulKernel& mk = step.fused
                                        ? *static_cast<const kernels::FusedMatmulKernel*>(step.kernel)->mk
                                        : *static_cast<const kernels::MatmulKernel*>(step.kernel);
  const kernels::MatmulKernel* walk = kernels::decode_matmul_kernel(ctx.isa, mk.weight, ctx.strategy);
  if (walk == nullptr || walk == &mk) return c;
  if (walk->repack == nullptr) {  // the file's layout, the strategy's kernel: applies under --no-repack too
    if (walk->act != mk.act || walk->quantize != mk.quantize)
      return make_error(ErrorCode::Internal,
                        fmt::format("cpu: {}: the {} strategy's kernel converts activations "
                                    "unlike the file layout's",
                                    signature, decode_strategy_name(ctx.strategy)));
    auto entry = entry_for(step.fused, ctx.isa, walk, signature);
    if (!entry) return entry.error();
    c.kernel = *entry;
    return c;
  }
  if (ctx.repacks == nullptr || ctx.pool == nullptr) return c;
  if (ctx.batch_invariant && (mk.weight == graph::DType::F16 || mk.weight == graph::DType::BF16)) return c;
  for (size_t j = 0; j < step.n_weights; ++j)
    if (step.weights[j].data == nullptr) return c;  // not a parameter in the mapping: nothing to repack
  for (size_t j = 0; j < step.n_weights; ++j) {
    const MatmulWeight& w = step.weights[j];
    const size_t bytes = *graph::dtype_bytes(w.dtype, static_cast<uint64_t>(w.rows * w.k));
    auto copy = ctx.repacks->get(w.data, bytes, w.rows, w.k, *walk, *ctx.pool);
    if (!copy) return copy.error();
    c.weights[j] = *copy;
  }
  auto entry = entry_for(step.fused, ctx.isa, walk, signature);
  if (!entry) return entry.error();
  c.kernel = *entry;
  c.layout = walk->layout;
  return c;
}

}  // namespace glass::backend::cpu
