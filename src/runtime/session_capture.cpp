// Session::set_capture: graph nodes kept as extra outputs of the session's own plans, for analysis
// (hidden states after a layer, attention outputs). Adding outputs is the whole rewrite: backends
// treat every output as read at the end of the step, so fusions leave it in place and no in-place
// write reuses its buffer, and the numbers are the ones the model's own plans compute.
#include <fmt/format.h>

#include <algorithm>

#include "runtime/session_impl.h"

namespace glass {

Status Session::set_capture(const std::vector<std::string>& names) {
  Impl& s = *impl_;
  const graph::Graph& g = s.shape->mg.graph;
  graph::Graph with = g;
  std::vector<graph::NodeId> nodes;
  std::vector<Captured> captured;
  std::vector<std::vector<float>> step;
  graph::Bindings max;
  max[graph::Sym::T] = s.m->info.n_batch;
  max[graph::Sym::O] = s.m->info.n_batch;
  max[graph::Sym::S] = s.m->info.n_ctx;
  for (const std::string& name : names) {
    // The last node of a name is the value the model's dumps show under it (a reshape or a
    // composite's parts may come first).
    graph::NodeId id = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].name == name) id = static_cast<graph::NodeId>(i);
    if (id < 0)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("capture: no node named '{}' in the model's graph (glass graph lists them)", name));
    const graph::Node& n = g.node(id);
    // Rows of one size, so that the chunks of an eval stack into one [rows, ...] array.
    const bool per_token =
        !n.shape.empty() && (n.shape[0].sym == graph::Sym::T || n.shape[0].sym == graph::Sym::O) &&
        std::all_of(n.shape.begin() + 1, n.shape.end(), [](const graph::Dim& d) { return !d.is_symbolic(); });
    if (n.dtype != graph::DType::F32 || !per_token || graph::is_leaf(n.op))
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("capture: node '{}' is {}{}; only f32 nodes with a row per token (first "
                                    "dimension T or O, the others constant) can be captured",
                                    name, graph::dtype_name(n.dtype), graph::shape_to_string(n.shape)));
    if (std::find(nodes.begin(), nodes.end(), id) != nodes.end())
      return make_error(ErrorCode::InvalidArgument, fmt::format("capture: '{}' named twice", name));
    nodes.push_back(id);
    with.outputs.push_back(graph::Output{"capture:" + name, id});
    const graph::Extents e = graph::resolve(n.shape, max);
    Captured c{name, std::vector<int64_t>(e.dims.begin(), e.dims.begin() + e.rank), {}};
    c.shape[0] = 0;
    captured.push_back(std::move(c));
    step.emplace_back(static_cast<size_t>(e.numel()));
  }
  s.capture_nodes = std::move(nodes);
  s.captured = std::move(captured);
  s.capture_step = std::move(step);
  if (names.empty()) {
    s.capture_graph.reset();
  } else {
    s.capture_hash = with.hash();
    s.capture_graph = std::move(with);
  }
  // Bound again at the next eval, to the plans of the graph now in force.
  for (BoundPlan* bp : {&s.prefill, &s.decode}) {
    backend::OpProfile* profile = bp->stats.profile;
    *bp = BoundPlan{};
    bp->stats.profile = profile;
  }
  return {};
}

const std::vector<Session::Captured>& Session::captured() const { return impl_->captured; }

void Session::Impl::begin_captures() {
  for (Session::Captured& c : captured) {
    c.values.clear();
    c.shape[0] = 0;
  }
}

void Session::Impl::keep_captures(const graph::Bindings& bind, int64_t n_out) {
  const graph::Graph& g = *capture_graph;
  for (size_t k = 0; k < captured.size(); ++k) {
    const graph::Node& n = g.node(capture_nodes[k]);
    // A chunk none of whose tokens asked for logits computes one O row anyway: not the caller's.
    const int64_t rows = n.shape[0].sym == graph::Sym::O ? n_out : bind[graph::Sym::T];
    if (rows == 0) continue;
    int64_t row_size = 1;
    for (size_t d = 1; d < n.shape.size(); ++d) row_size *= n.shape[d].value;
    const float* at = capture_step[k].data();
    captured[k].values.insert(captured[k].values.end(), at, at + rows * row_size);
    captured[k].shape[0] += rows;
  }
}

}  // namespace glass
