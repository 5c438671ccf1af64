#pragma once
// Which kernel a matmul step of a cpu plan runs and which copy of its weights it reads. The op table
// (kernels.cpp) gives every matmul its tier's file-layout kernel; the decode strategy (isa.h) may name
// another for the weight type in the matmul table (kernels/matmul.h): a repacked layout's, reading the
// backend's copy of each weight in that layout (made once, weight_repack.h), or a file-layout kernel of
// the strategy's own. Fused matmuls (matmul_add, matmul_swiglu, matmul_geglu) take the chosen kernel's
// fused entry.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "backend/cpu/isa.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/weight_repack.h"
#include "glass/result.h"
#include "graph/dtype.h"

namespace glass::backend::cpu {

// One weight input of a matmul step.
struct MatmulWeight {
  const void* data = nullptr;  // a 2-D parameter's bytes in the mapping; null for any other input
  int64_t rows = 0, k = 0;
  graph::DType dtype = graph::DType::F32;
};

// A matmul step as the op table chose it.
struct MatmulStep {
  const void* kernel = nullptr;  // a kernels::MatmulKernel, or a kernels::FusedMatmulKernel when fused
  bool fused = false;
  std::array<MatmulWeight, 2> weights{};  // one, or two for matmul_swiglu / matmul_geglu
  size_t n_weights = 1;
};

// What the plan decides with.
struct MatmulChoiceContext {
  Isa isa = Isa::Scalar;  // the step's kernel's tier
  DecodeStrategy strategy = DecodeStrategy::Spread;
  bool batch_invariant = false;      // F16/BF16 keep the file layout (the 16-row one sums k in another order)
  WeightRepacks* repacks = nullptr;  // null: --no-repack
  ThreadPool* pool = nullptr;        // splits a repack
};

// The step's kernel, as MatmulStep::kernel, and what each weight input reads.
struct MatmulChoice {
  const void* kernel = nullptr;
  std::array<const void*, 2> weights{};
  const char* layout = nullptr;  // the repacked layout's name, or null (the file's layout)
};

// The choice for `step`; an error (naming `signature`, the op and its types) where the matmul table
// is inconsistent or a repack fails.
Result<MatmulChoice> choose_matmul_kernel(const MatmulStep& step, const MatmulChoiceContext& ctx,
                                          std::string_view signature);

}  // namespace glass::backend::cpu
