#include "backend/backend.h"

#include <fmt/format.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/ref/ref_backend.h"

namespace glass::backend {

std::string kernel_signature(const graph::Graph& g, const graph::Node& n) {
  std::vector<std::string> dts;
  for (graph::NodeId in : n.inputs) dts.emplace_back(graph::dtype_name(g.node(in).dtype));
  return fmt::format("{}({})", graph::op_name(n.op), fmt::join(dts, ", "));
}

Result<Lowered> lower_for(const Backend& backend, const graph::Graph& g, const CompileOptions& options) {
  Lowered out;
  auto lowered = graph::decompose_composites(
      g, [&](const graph::Node& n) { return options.decompose_composites || !backend.supports(g, n); },
      out.log, options.max);
  if (!lowered) return lowered.error();
  auto live = graph::eliminate_dead_nodes(*lowered, out.log);
  if (!live) return live.error();
  out.graph = std::move(*live);
  for (const graph::Node& n : out.graph.nodes) {
    if (graph::is_leaf(n.op) || backend.supports(out.graph, n)) continue;
    return make_error(ErrorCode::Unsupported, fmt::format("{}: no kernel for {} (node '{}')", backend.name(),
                                                          kernel_signature(out.graph, n), n.name));
  }
  return out;
}

Result<std::unique_ptr<Backend>> make_backend(std::string_view name, const BackendOptions& options) {
  if (name == "ref") return std::unique_ptr<Backend>(std::make_unique<ref::RefBackend>());
  if (name == "cpu") {
    std::optional<cpu::Isa> isa;
    if (!options.isa.empty()) {
      auto parsed = cpu::parse_isa(options.isa);
      if (!parsed) return parsed.error();
      isa = *parsed;
    }
    // A bad name is an error here.
    auto strategy = options.decode_strategy.empty()
                        ? Result<cpu::DecodeStrategy>(cpu::detect_decode_strategy())
                        : cpu::parse_decode_strategy(options.decode_strategy, "decode_strategy");
    if (!strategy) return strategy.error();
    return std::unique_ptr<Backend>(std::make_unique<cpu::CpuBackend>(
        cpu::CpuOptions{options.n_threads, isa, options.repack_weights, options.weight_copied, *strategy}));
  }
  return make_error(ErrorCode::Unsupported,
                    fmt::format("backend '{}' is not available (available: ref, cpu)", name));
}

}  // namespace glass::backend
