#include "backend/plan_cache.h"

namespace glass::backend {

Result<std::shared_ptr<Plan>> PlanCache::get(const Backend& backend, const graph::Graph& g,
                                             uint64_t graph_hash, const WeightResolver& weights,
                                             const CompileOptions& options) {
  const PlanKey key{graph_hash,
                    std::string(backend.name()),
                    options.max[graph::Sym::T],
                    options.max[graph::Sym::S],
                    options.max[graph::Sym::O],
                    options.decompose_composites,
                    options.fuse,
                    options.batch_invariant};
  std::lock_guard lock(mu_);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  auto plan = backend.compile(g, weights, options);
  if (!plan) return plan.error();
  compiles_++;
  std::shared_ptr<Plan> shared = std::move(*plan);
  plans_.emplace(key, shared);
  return shared;
}

}  // namespace glass::backend
