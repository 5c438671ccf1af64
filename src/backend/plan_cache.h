#pragma once
// Compiled plans keyed by graph hash + backend + bucket. Plans are immutable once compiled and
// shared between sessions; `compiles()` counts compilations, which must stay flat while generating.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "backend/backend.h"

namespace glass::backend {

struct PlanKey {
  uint64_t graph_hash = 0;
  std::string backend;
  int64_t max_t = 0;
  int64_t max_s = 0;
  int64_t max_o = 0;
  bool decomposed = false;
  bool fused = true;
  bool batch_invariant = false;
  auto operator<=>(const PlanKey&) const = default;
};

class PlanCache {
 public:
  // Returns the cached plan for the key or compiles it.
  Result<std::shared_ptr<Plan>> get(const Backend& backend, const graph::Graph& g, uint64_t graph_hash,
                                    const WeightResolver& weights, const CompileOptions& options);
  uint64_t compiles() const { return compiles_.load(); }

 private:
  std::mutex mu_;
  std::map<PlanKey, std::shared_ptr<Plan>> plans_;
  std::atomic<uint64_t> compiles_{0};
};

}  // namespace glass::backend
