#pragma once
// The cpu backend: SIMD kernels (AVX2 / AVX-512 chosen at run time, a scalar fallback for each),
// quantized dot products straight from the mapped weights, fused attention / norm / rope / swiglu,
// one persistent thread pool, and plans whose buffers come from a liveness-based memory planner.
#include <memory>
#include <optional>

#include "backend/backend.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/weight_repack.h"

namespace glass::backend::cpu {

struct CpuOptions {
  int n_threads = 0;           // <= 0: one per hardware thread
  std::optional<Isa> max_isa;  // default: the best this CPU runs
  bool repack_weights = true;  // one-time repacks into faster kernel layouts (weight_repack.h)
  WeightCopied weight_copied;  // told of each weight repacked (backend.h); may be empty
  std::optional<DecodeStrategy> decode_strategy;  // default: detect_decode_strategy() (isa.h)
};

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuOptions& options = {});
  std::string_view name() const override { return "cpu"; }
  std::string describe() const override;
  bool supports(const graph::Graph& g, const graph::Node& n) const override;
  std::vector<std::string> kernel_table() const override;
  Result<std::unique_ptr<Plan>> compile(const graph::Graph& g, const WeightResolver& weights,
                                        const CompileOptions& options) const override;

  Isa isa() const { return isa_; }
  DecodeStrategy decode_strategy() const { return strategy_; }
  ThreadPool& pool() const { return *pool_; }

 private:
  Isa isa_;
  DecodeStrategy strategy_;
  std::shared_ptr<ThreadPool> pool_;        // shared with the plans compiled here
  std::shared_ptr<WeightRepacks> repacks_;  // null: no repacking; else shared with the plans
};

// What a compiled cpu plan holds, for tests and reports.
struct CpuPlanInfo {
  size_t arena_bytes = 0;     // intermediates after buffer reuse
  size_t arena_unshared = 0;  // the same without reuse
  size_t scratch_bytes = 0;
  size_t n_kernels = 0;   // kernel calls per step
  size_t n_in_place = 0;  // kernels writing over their input's buffer
  size_t n_repacked = 0;  // matmuls reading a repacked copy of their weight (weight_repack.h)
};
// The info of a plan compiled by CpuBackend (nullopt for other plans).
std::optional<CpuPlanInfo> cpu_plan_info(const Plan& plan);

}  // namespace glass::backend::cpu
