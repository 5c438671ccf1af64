#pragma once
// Runs a small graph on a backend for tests: named inputs and states in, outputs out.
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "graph/graph.h"

namespace glass::test {

using Buffer = std::variant<std::vector<float>, std::vector<int32_t>>;

struct GraphRun {
  std::map<std::string, Buffer> inputs;  // by input name
  std::map<std::string, Buffer> states;  // by state name; updated in place
  graph::Bindings bind;
  std::vector<std::vector<float>> outputs;  // filled by run_graph
  backend::StepStats stats;
};

// Compiles `g` on the ref backend (with `max` as the bucket) and runs it once. Weights are resolved
// from `weights` by parameter name.
Status run_graph(const graph::Graph& g, GraphRun& run, const graph::Bindings& max, bool decompose,
                 const std::map<std::string, const void*>& weights = {});

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f);
// A one-sequence block table naming blocks 0 .. n_blocks-1 in order (the cache as one run).
inline std::vector<int32_t> identity_table(int64_t n_blocks) {
  std::vector<int32_t> t(static_cast<size_t>(n_blocks));
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<int32_t>(i);
  return t;
}
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace glass::test
