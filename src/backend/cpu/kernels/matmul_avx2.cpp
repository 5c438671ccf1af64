// Matmul kernels of the avx2 tier: matmul_x86_impl.h compiled with this tier's flags
// (backend/CMakeLists.txt).
#include "backend/cpu/kernels/matmul.h"

#if defined(__AVX2__)
#include "backend/cpu/kernels/matmul_x86_impl.h"
#endif

namespace glass::backend::cpu::kernels {

const MatmulKernel* matmul_kernel_avx2(graph::DType weight) {
#if defined(__AVX2__)
  return x86_kernel(weight);
#else
  (void)weight;
  return nullptr;  // not an x86 build: the tier is never selected
#endif
}

}  // namespace glass::backend::cpu::kernels
