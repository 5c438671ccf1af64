// VecOps compiled for the avx2 tier (flags in backend/CMakeLists.txt); the source is shared.
#include "backend/cpu/kernels/vec_ops.h"

#if defined(__AVX2__)
#include "backend/cpu/kernels/attention_impl.h"
#include "backend/cpu/kernels/vec_ops_impl.h"
#endif

namespace glass::backend::cpu::kernels {

const VecOps& vec_ops_avx2() {
#if !defined(__AVX2__)
  return vec_ops_scalar();  // not built for this ISA (non-x86 target): never selected
#else
  static constexpr VecOps kOps{rms_norm_row, swiglu_row,      silu_row,       add_row,
                               mul_row,      attention_block, attention_pack, delta_rule};
  return kOps;
#endif
}

}  // namespace glass::backend::cpu::kernels
