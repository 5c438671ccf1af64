#include "support/graph_runner.h"

#include <cmath>

#include "backend/ref/ref_backend.h"

namespace glass::test {

Status run_graph(const graph::Graph& g, GraphRun& run, const graph::Bindings& max, bool decompose,
                 const std::map<std::string, const void*>& weights) {
  backend::ref::RefBackend ref;
  backend::CompileOptions opt;
  opt.max = max;
  opt.decompose_composites = decompose;
  auto resolver = [&](const graph::Node& n) -> Result<const void*> {
    auto it = weights.find(n.name);
    if (it == weights.end()) return make_error(ErrorCode::InvalidArgument, "test: no weight " + n.name);
    return it->second;
  };
  auto plan = ref.compile(g, resolver, opt);
  if (!plan) return plan.error();
  const graph::Graph& cg = (*plan)->compiled_graph();
  backend::StepArgs args;
  args.bind = run.bind;
  auto ptr = [](Buffer& b) -> void* { return std::visit([](auto& v) -> void* { return v.data(); }, b); };
  for (graph::NodeId id : cg.leaves(graph::Op::Input))
    args.inputs.push_back(ptr(run.inputs.at(cg.node(id).name)));
  for (graph::NodeId id : cg.leaves(graph::Op::State))
    args.states.push_back(ptr(run.states.at(cg.node(id).name)));
  run.outputs.clear();
  for (const graph::Output& o : cg.outputs)
    run.outputs.emplace_back(static_cast<size_t>(graph::resolve(cg.node(o.node).shape, run.bind).numel()));
  for (auto& o : run.outputs) args.outputs.push_back(o.data());
  auto ws = (*plan)->make_workspace();
  return (*plan)->run(args, *ws, run.stats);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace glass::test
