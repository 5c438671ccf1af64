// The moe op: the ref kernel against its reference decomposition and against the formula written
// out here (top-k of the router probabilities, optional renormalisation, SwiGLU experts), and the
// rule that only the chosen experts' weights are used (the others are NaN here).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/builder.h"
#include "support/graph_runner.h"

namespace glass {
namespace {

using graph::Builder;
using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;

constexpr int64_t kT = 5, kD = 16, kF = 8, kE = 4;

graph::Bindings tokens(int64_t t) {
  graph::Bindings b;
  b[Sym::T] = t;
  return b;
}

graph::Graph moe_graph(int n_used, bool normalize) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p = b.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto gate = b.parameter("gate", graph::make_shape({kE, kF, kD}), DType::F32);
  auto up = b.parameter("up", graph::make_shape({kE, kF, kD}), DType::F32);
  auto down = b.parameter("down", graph::make_shape({kE, kD, kF}), DType::F32);
  b.output("y", b.moe(x, p, gate, up, down, graph::MoeAttrs{n_used, normalize}));
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return *g;
}

struct Experts {
  std::vector<float> gate = test::random_floats(kE * kF * kD, 11, 0.5f);
  std::vector<float> up = test::random_floats(kE * kF * kD, 12, 0.5f);
  std::vector<float> down = test::random_floats(kE * kD * kF, 13, 0.5f);
  std::map<std::string, const void*> weights() const {
    return {{"gate", gate.data()}, {"up", up.data()}, {"down", down.data()}};
  }
};

// Router probabilities with distinct values per row (a softmax of random logits).
std::vector<float> probabilities(uint32_t seed) {
  std::vector<float> p = test::random_floats(kT * kE, seed, 2.0f);
  for (int64_t t = 0; t < kT; ++t) {
    double sum = 0;
    for (int64_t e = 0; e < kE; ++e) sum += std::exp(p[static_cast<size_t>(t * kE + e)]);
    for (int64_t e = 0; e < kE; ++e) {
      float& v = p[static_cast<size_t>(t * kE + e)];
      v = static_cast<float>(std::exp(v) / sum);
    }
  }
  return p;
}

// The formula, in double: SwiGLU experts, or (gemma4) GeGLU with tanh-GELU and each expert's output
// times scale[e].
std::vector<float> formula(const std::vector<float>& x, const std::vector<float>& p, const Experts& w,
                           int n_used, bool normalize, const std::vector<float>* scale = nullptr) {
  std::vector<float> y(static_cast<size_t>(kT * kD), 0.0f);
  for (int64_t t = 0; t < kT; ++t) {
    std::vector<int64_t> order(kE);
    for (int64_t e = 0; e < kE; ++e) order[static_cast<size_t>(e)] = e;
    const float* pt = &p[static_cast<size_t>(t * kE)];
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return pt[a] > pt[b]; });
    double total = 0;
    for (int j = 0; j < n_used; ++j) total += pt[order[static_cast<size_t>(j)]];
    for (int j = 0; j < n_used; ++j) {
      const int64_t e = order[static_cast<size_t>(j)];
      const double wt = normalize ? pt[e] / total : pt[e];
      std::vector<double> h(kF);
      for (int64_t f = 0; f < kF; ++f) {
        double g = 0, u = 0;
        for (int64_t d = 0; d < kD; ++d) {
          g +=
              w.gate[static_cast<size_t>((e * kF + f) * kD + d)] * double{x[static_cast<size_t>(t * kD + d)]};
          u += w.up[static_cast<size_t>((e * kF + f) * kD + d)] * double{x[static_cast<size_t>(t * kD + d)]};
        }
        const double gelu = 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
        h[static_cast<size_t>(f)] = (scale != nullptr ? gelu : g / (1 + std::exp(-g))) * u;
      }
      for (int64_t d = 0; d < kD; ++d) {
        double acc = 0;
        for (int64_t f = 0; f < kF; ++f)
          acc += w.down[static_cast<size_t>((e * kD + d) * kF + f)] * h[static_cast<size_t>(f)];
        const double s = scale != nullptr ? (*scale)[static_cast<size_t>(e)] : 1.0;
        y[static_cast<size_t>(t * kD + d)] += static_cast<float>(wt * s * acc);
      }
    }
  }
  return y;
}

struct MoeCase {
  int n_used;
  bool normalize;
};

class MoeTest : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeTest, KernelMatchesFormulaAndDecomposition) {
  const MoeCase c = GetParam();
  const graph::Graph g = moe_graph(c.n_used, c.normalize);
  const Experts w;
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(kT * kD, 1);
  run.inputs["p"] = probabilities(2);
  run.bind = tokens(kT);
  test::GraphRun fused = run, lowered = run;
  auto a = test::run_graph(g, fused, tokens(8), false, w.weights());
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto d = test::run_graph(g, lowered, tokens(8), true, w.weights());
  ASSERT_TRUE(d.ok()) << d.error().message;
  const auto want = formula(std::get<std::vector<float>>(run.inputs["x"]),
                            std::get<std::vector<float>>(run.inputs["p"]), w, c.n_used, c.normalize);
  EXPECT_LT(test::max_abs_diff(fused.outputs[0], want), 1e-5);
  EXPECT_LT(test::max_abs_diff(lowered.outputs[0], want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Routing, MoeTest,
                         ::testing::Values(MoeCase{2, true}, MoeCase{2, false}, MoeCase{1, true},
                                           MoeCase{3, false}, MoeCase{4, true}),
                         [](const auto& p) {
                           return "top" + std::to_string(p.param.n_used) +
                                  (p.param.normalize ? "_norm" : "_raw");
                         });

// Gemma 4's experts: gate and up in one [E, 2F, D] tensor (each expert's gate rows, then its up rows),
// GeGLU, and a per-expert scale on each expert's output.
TEST(Moe, FusedGateUpGegluAndExpertScale) {
  const Experts w;
  std::vector<float> gate_up;
  for (int64_t e = 0; e < kE; ++e) {
    gate_up.insert(gate_up.end(), w.gate.begin() + e * kF * kD, w.gate.begin() + (e + 1) * kF * kD);
    gate_up.insert(gate_up.end(), w.up.begin() + e * kF * kD, w.up.begin() + (e + 1) * kF * kD);
  }
  const std::vector<float> scale{0.5f, 2.0f, -1.0f, 1.5f};
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p = b.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto gu = b.parameter("gate_up", graph::make_shape({kE, 2 * kF, kD}), DType::F32);
  auto down = b.parameter("down", graph::make_shape({kE, kD, kF}), DType::F32);
  auto s = b.parameter("scale", graph::make_shape({kE}), DType::F32);
  b.output("y", b.moe(x, p, gu, gu, down, graph::MoeAttrs{2, true, graph::MoeActivation::GeGlu, true}, s));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  const std::map<std::string, const void*> weights{
      {"gate_up", gate_up.data()}, {"down", w.down.data()}, {"scale", scale.data()}};
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(kT * kD, 1);
  run.inputs["p"] = probabilities(2);
  run.bind = tokens(kT);
  test::GraphRun kernel = run, lowered = run;
  auto a = test::run_graph(*g, kernel, tokens(8), false, weights);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto d = test::run_graph(*g, lowered, tokens(8), true, weights);
  ASSERT_TRUE(d.ok()) << d.error().message;
  const auto want = formula(std::get<std::vector<float>>(run.inputs["x"]),
                            std::get<std::vector<float>>(run.inputs["p"]), w, 2, true, &scale);
  EXPECT_LT(test::max_abs_diff(kernel.outputs[0], want), 1e-5);
  EXPECT_LT(test::max_abs_diff(lowered.outputs[0], want), 1e-5);
  // The SwiGLU formula is not what this computes.
  EXPECT_GT(test::max_abs_diff(kernel.outputs[0],
                               formula(std::get<std::vector<float>>(run.inputs["x"]),
                                       std::get<std::vector<float>>(run.inputs["p"]), w, 2, true)),
            1e-2);
}

// gpt-oss's experts: biases on gate, up and down, and the clamped SwiGLU (x = min(g, 7), y =
// clamp(u, -7, 7), x sigmoid(1.702 x) (y + 1)); large weights so that the clamps bite.
TEST(Moe, BiasedExpertsWithTheClampedSwiglu) {
  Experts w;
  for (auto* t : {&w.gate, &w.up})
    for (float& v : *t) v *= 6.0f;
  const std::vector<float> gate_b = test::random_floats(kE * kF, 21, 2.0f),
                           up_b = test::random_floats(kE * kF, 22, 2.0f);
  const std::vector<float> down_b = test::random_floats(kE * kD, 23);
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p = b.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto gate = b.parameter("gate", graph::make_shape({kE, kF, kD}), DType::F32);
  auto up = b.parameter("up", graph::make_shape({kE, kF, kD}), DType::F32);
  auto down = b.parameter("down", graph::make_shape({kE, kD, kF}), DType::F32);
  auto gb = b.parameter("gate_b", graph::make_shape({kE, kF}), DType::F32);
  auto ub = b.parameter("up_b", graph::make_shape({kE, kF}), DType::F32);
  auto db = b.parameter("down_b", graph::make_shape({kE, kD}), DType::F32);
  b.output("y", b.moe_biased(x, p, gate, up, down, gb, ub, db,
                             graph::MoeAttrs{2, true, graph::MoeActivation::SwiGluOai, false}));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::map<std::string, const void*> weights = w.weights();
  weights["gate_b"] = gate_b.data();
  weights["up_b"] = up_b.data();
  weights["down_b"] = down_b.data();
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(kT * kD, 1);
  run.inputs["p"] = probabilities(2);
  run.bind = tokens(kT);
  test::GraphRun kernel = run, lowered = run;
  ASSERT_TRUE(test::run_graph(*g, kernel, tokens(8), false, weights).ok());
  ASSERT_TRUE(test::run_graph(*g, lowered, tokens(8), true, weights).ok());
  // The formula in double.
  const auto& xs = std::get<std::vector<float>>(run.inputs["x"]);
  const auto& ps = std::get<std::vector<float>>(run.inputs["p"]);
  std::vector<float> want(static_cast<size_t>(kT * kD), 0.0f);
  int clamped = 0;
  for (int64_t t = 0; t < kT; ++t) {
    std::vector<int64_t> order(kE);
    for (int64_t e = 0; e < kE; ++e) order[static_cast<size_t>(e)] = e;
    const float* pt = &ps[static_cast<size_t>(t * kE)];
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t c) { return pt[a] > pt[c]; });
    const double total = pt[order[0]] + pt[order[1]];
    for (int j = 0; j < 2; ++j) {
      const int64_t e = order[static_cast<size_t>(j)];
      std::vector<double> h(kF);
      for (int64_t f = 0; f < kF; ++f) {
        double gv = gate_b[static_cast<size_t>(e * kF + f)], uv = up_b[static_cast<size_t>(e * kF + f)];
        for (int64_t d = 0; d < kD; ++d) {
          gv += w.gate[static_cast<size_t>((e * kF + f) * kD + d)] *
                double{xs[static_cast<size_t>(t * kD + d)]};
          uv +=
              w.up[static_cast<size_t>((e * kF + f) * kD + d)] * double{xs[static_cast<size_t>(t * kD + d)]};
        }
        clamped += gv > 7 || std::abs(uv) > 7;
        const double gx = std::min(gv, 7.0), uy = std::clamp(uv, -7.0, 7.0);
        h[static_cast<size_t>(f)] = gx / (1 + std::exp(-1.702 * gx)) * (uy + 1);
      }
      for (int64_t d = 0; d < kD; ++d) {
        double acc = down_b[static_cast<size_t>(e * kD + d)];
        for (int64_t f = 0; f < kF; ++f)
          acc += w.down[static_cast<size_t>((e * kD + d) * kF + f)] * h[static_cast<size_t>(f)];
        want[static_cast<size_t>(t * kD + d)] += static_cast<float>(pt[e] / total * acc);
      }
    }
  }
  EXPECT_GT(clamped, 10) << "the clamps should bite";
  EXPECT_LT(test::max_abs_diff(kernel.outputs[0], want), 1e-4);
  EXPECT_LT(test::max_abs_diff(lowered.outputs[0], want), 1e-4);
}

// Experts 1 and 3 are never chosen (their probability is the lowest in every row) and hold NaN:
// the kernel must not touch them, while the dense decomposition (the definition) propagates NaN.
TEST(Moe, KernelUsesOnlyTheChosenExperts) {
  const graph::Graph g = moe_graph(2, true);
  Experts w;
  for (int64_t e : {1, 3}) {
    std::fill_n(w.gate.begin() + e * kF * kD, kF * kD, std::numeric_limits<float>::quiet_NaN());
    std::fill_n(w.up.begin() + e * kF * kD, kF * kD, std::numeric_limits<float>::quiet_NaN());
    std::fill_n(w.down.begin() + e * kD * kF, kD * kF, std::numeric_limits<float>::quiet_NaN());
  }
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(kT * kD, 1);
  std::vector<float> p(static_cast<size_t>(kT * kE));
  for (int64_t t = 0; t < kT; ++t) {
    const float row[kE] = {0.4f - 0.01f * static_cast<float>(t), 0.05f, 0.5f,
                           0.05f + 0.01f * static_cast<float>(t)};
    std::copy(row, row + kE, p.begin() + t * kE);
  }
  run.inputs["p"] = p;
  run.bind = tokens(kT);
  test::GraphRun fused = run;
  auto a = test::run_graph(g, fused, tokens(kT), false, w.weights());
  ASSERT_TRUE(a.ok()) << a.error().message;
  for (float v : fused.outputs[0]) ASSERT_TRUE(std::isfinite(v));
  test::GraphRun lowered = run;
  auto d = test::run_graph(g, lowered, tokens(kT), true, w.weights());
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE(std::isnan(lowered.outputs[0][0]));
}

TEST(Moe, RejectsBadShapesAndCounts) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p = b.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto gate = b.parameter("gate", graph::make_shape({kE, kF, kD}), DType::F32);
  auto down = b.parameter("down", graph::make_shape({kE, kD, kF}), DType::F32);
  b.moe(x, p, gate, gate, down, graph::MoeAttrs{kE + 1, true});
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("n_used 5"), std::string::npos) << g.error().message;
  Builder b2;
  auto x2 = b2.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p2 = b2.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto g2 = b2.parameter("gate", graph::make_shape({kE, kF, kD}), DType::F32);
  b2.moe(x2, p2, g2, g2, g2, graph::MoeAttrs{2, true});  // down has the gate's shape
  auto r2 = b2.finish();
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("expert shapes"), std::string::npos) << r2.error().message;
}

}  // namespace
}  // namespace glass
