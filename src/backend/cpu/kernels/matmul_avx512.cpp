// Matmul kernels of the avx512 tier: matmul_x86_impl.h compiled with this tier's flags
// (backend/CMakeLists.txt); VNNI's dpbusd / dpwssd replace the AVX2 multiply-add pairs.
#include "backend/cpu/kernels/matmul.h"

#if defined(__AVX512F__)
#include "backend/cpu/kernels/matmul_x86_impl.h"
#endif

namespace glass::backend::cpu::kernels {

std::span<const MatmulRow> matmul_rows_avx512() {
#if defined(__AVX512F__)
  return x86_rows();
#else
  return {};  // not an x86 build: the tier is never selected
#endif
}

}  // namespace glass::backend::cpu::kernels
