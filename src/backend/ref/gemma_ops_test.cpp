// The ops Gemma needs, twice each: the ref kernel against its reference decomposition and against
// the formula written out here: softcap, gelu and geglu (tanh form), and attention with a sliding
// window and score soft-capping (a query sees positions p - window + 1 .. p).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "graph/builder.h"
#include "support/graph_runner.h"

namespace glass {
namespace {

using graph::Builder;
using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;
using test::GraphRun;

graph::Bindings bindings(int64_t t, int64_t s) {
  graph::Bindings b;
  b[Sym::T] = t;
  b[Sym::S] = s;
  return b;
}

std::pair<std::vector<float>, std::vector<float>> both_ways(const graph::Graph& g, const GraphRun& run,
                                                            const graph::Bindings& max) {
  GraphRun fused = run, lowered = run;
  auto a = test::run_graph(g, fused, max, false);
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().message);
  auto b = test::run_graph(g, lowered, max, true);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
  if (!a.ok() || !b.ok()) return {};
  return {fused.outputs[0], lowered.outputs[0]};
}

double gelu(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TEST(GemmaOps, SoftcapGeluGegluMatchFormulaAndDecomposition) {
  const int64_t n = 3 * 40;
  for (graph::Op op : {graph::Op::Softcap, graph::Op::Gelu, graph::Op::GeGlu}) {
    Builder b;
    auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(40)}, DType::F32);
    auto u = b.input("u", Shape{Dim::symbol(Sym::T), Dim::constant(40)}, DType::F32);
    b.output("y", op == graph::Op::Softcap ? b.softcap(x, 5.0f)
                  : op == graph::Op::Gelu  ? b.gelu(x)
                                           : b.geglu(x, u));
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.error().message;
    GraphRun run;
    run.inputs["x"] = test::random_floats(n, 11, 8.0f);  // well into tanh's saturation
    run.inputs["u"] = test::random_floats(n, 12);
    run.bind = bindings(3, 0);
    auto [fused, lowered] = both_ways(*g, run, bindings(4, 0));
    ASSERT_EQ(fused.size(), static_cast<size_t>(n)) << graph::op_name(op);
    EXPECT_LT(test::max_abs_diff(fused, lowered), 2e-6) << graph::op_name(op);
    const auto& xs = std::get<std::vector<float>>(run.inputs["x"]);
    const auto& us = std::get<std::vector<float>>(run.inputs["u"]);
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      const double want = op == graph::Op::Softcap ? 5.0 * std::tanh(xs[i] / 5.0)
                          : op == graph::Op::Gelu  ? gelu(xs[i])
                                                   : gelu(xs[i]) * us[i];
      EXPECT_NEAR(fused[i], want, 2e-6) << graph::op_name(op) << " x=" << xs[i];
    }
  }
}

// Attention over a 20-position cache with window 6 and softcap 2: query at position p sees rows
// max(0, p - 5) .. p only, scores 2 tanh(s / 2).
TEST(GemmaOps, WindowedSoftcappedAttentionMatchesNaiveAndDecomposition) {
  const int64_t H = 4, Hkv = 2, D = 8, C = 24, T = 5, past = 15, W = 6;
  const float cap = 2.0f, scale = 0.9f;
  Builder b;
  const Shape tok{Dim::symbol(Sym::T)};
  auto q = b.input("q", Shape{Dim::symbol(Sym::T), Dim::constant(H), Dim::constant(D)}, DType::F32);
  auto k = b.input("k", Shape{Dim::symbol(Sym::T), Dim::constant(Hkv), Dim::constant(D)}, DType::F32);
  auto v = b.input("v", Shape{Dim::symbol(Sym::T), Dim::constant(Hkv), Dim::constant(D)}, DType::F32);
  auto pos = b.input("pos", tok, DType::I32);
  auto kc = b.state("kc", graph::make_shape({C, Hkv, D}), DType::F32);
  auto vc = b.state("vc", graph::make_shape({C, Hkv, D}), DType::F32);
  auto seq = b.input("seq", tok, DType::I32);
  auto table = b.input("table", graph::make_shape({1, C / 4}), DType::I32);
  auto k2 = b.kv_write(kc, k, pos);
  auto v2 = b.kv_write(vc, v, pos);
  b.update_state(kc, k2);
  b.update_state(vc, v2);
  b.output("o", b.attention(q, k2, v2, pos, seq, table,
                            graph::AttentionAttrs{scale, Dim::symbol(Sym::S), W, cap, 4}));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;

  GraphRun run;
  run.inputs["q"] = test::random_floats(T * H * D, 21, 2.0f);
  run.inputs["k"] = test::random_floats(T * Hkv * D, 22);
  run.inputs["v"] = test::random_floats(T * Hkv * D, 23);
  std::vector<int32_t> p;
  for (int64_t t = 0; t < T; ++t) p.push_back(static_cast<int32_t>(past + t));
  run.inputs["pos"] = p;
  std::vector<float> kcache = test::random_floats(C * Hkv * D, 24),
                     vcache = test::random_floats(C * Hkv * D, 25);
  run.states["kc"] = kcache;
  run.states["vc"] = vcache;
  run.inputs["seq"] = std::vector<int32_t>(T, 0);
  run.inputs["table"] = test::identity_table(C / 4);
  run.bind = bindings(T, past + T);
  auto [fused, lowered] = both_ways(*g, run, bindings(8, C));
  ASSERT_EQ(fused.size(), static_cast<size_t>(T * H * D));
  EXPECT_LT(test::max_abs_diff(fused, lowered), 1e-5);

  // The ref kernel never reads rows outside the window: poisoning them changes nothing.
  GraphRun poisoned = run;
  auto& pk = std::get<std::vector<float>>(poisoned.states["kc"]);
  auto& pv = std::get<std::vector<float>>(poisoned.states["vc"]);
  for (int64_t i = 0; i < (past - W + 1) * Hkv * D; ++i)
    pk[static_cast<size_t>(i)] = pv[static_cast<size_t>(i)] = NAN;
  ASSERT_TRUE(test::run_graph(*g, poisoned, bindings(8, C), false).ok());
  EXPECT_EQ(test::max_abs_diff(poisoned.outputs[0], fused), 0.0);

  const auto& qs = std::get<std::vector<float>>(run.inputs["q"]);
  const auto& ks = std::get<std::vector<float>>(run.inputs["k"]);
  const auto& vs = std::get<std::vector<float>>(run.inputs["v"]);
  for (int64_t t = 0; t < T; ++t)
    for (int i = 0; i < Hkv * D; ++i) {
      kcache[static_cast<size_t>((past + t) * Hkv * D + i)] = ks[static_cast<size_t>(t * Hkv * D + i)];
      vcache[static_cast<size_t>((past + t) * Hkv * D + i)] = vs[static_cast<size_t>(t * Hkv * D + i)];
    }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / (H / Hkv), qp = past + t, first = std::max<int64_t>(0, qp - W + 1);
      std::vector<double> w;
      double mx = -1e300, sum = 0;
      for (int64_t s = first; s <= qp; ++s) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += qs[static_cast<size_t>((t * H + h) * D + d)] *
                 kcache[static_cast<size_t>((s * Hkv + hk) * D + d)];
        w.push_back(cap * std::tanh(scale * dot / cap));
        mx = std::max(mx, w.back());
      }
      for (auto& x : w) sum += (x = std::exp(x - mx));
      for (int64_t d = 0; d < D; ++d) {
        double o = 0;
        for (int64_t s = first; s <= qp; ++s)
          o += w[static_cast<size_t>(s - first)] / sum * vcache[static_cast<size_t>((s * Hkv + hk) * D + d)];
        EXPECT_NEAR(fused[static_cast<size_t>((t * H + h) * D + d)], o, 1e-5) << "t=" << t << " h=" << h;
      }
    }
}

}  // namespace
}  // namespace glass
