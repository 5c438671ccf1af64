#pragma once
// The reference backend: an obviously-correct interpreter of every op in plain f32 loops. It is the
// yardstick faster backends are tested against, never the fast path.
#include "backend/backend.h"

namespace glass::backend::ref {

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }
  bool supports(const graph::Graph& g, const graph::Node& n) const override;
  std::vector<std::string> kernel_table() const override;
  Result<std::unique_ptr<Plan>> compile(const graph::Graph& g, const WeightResolver& weights,
                                        const CompileOptions& options) const override;
};

}  // namespace glass::backend::ref
