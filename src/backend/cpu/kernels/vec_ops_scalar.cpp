// VecOps compiled for the scalar tier (flags in backend/CMakeLists.txt); the source is shared.
#include "backend/cpu/kernels/attention_impl.h"
#include "backend/cpu/kernels/vec_ops_impl.h"

namespace glass::backend::cpu::kernels {

const VecOps& vec_ops_scalar() {
  static constexpr VecOps kOps{rms_norm_row, swiglu_row,      silu_row,       add_row,
                               mul_row,      attention_block, attention_pack, delta_rule};
  return kOps;
}

const VecOps& vec_ops_for(Isa isa) {
  switch (isa) {
    case Isa::Avx512Bf16:  // the tier adds bf16 matmuls only
    case Isa::Avx512:
      return vec_ops_avx512();
    case Isa::Avx2:
      return vec_ops_avx2();
    default:
      return vec_ops_scalar();
  }
}

}  // namespace glass::backend::cpu::kernels
