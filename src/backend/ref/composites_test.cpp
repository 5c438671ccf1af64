// Every composite op twice: the ref kernel against its reference decomposition (run through the ref
// primitives), and both against the formula written out in the test.
#include <gtest/gtest.h>

#include <cmath>

#include "graph/builder.h"
#include "graph/ops/infer.h"
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

// Runs `g` with composites as kernels and decomposed; both must succeed. Returns output 0 of each.
std::pair<std::vector<float>, std::vector<float>> both_ways(const graph::Graph& g, GraphRun run,
                                                            const graph::Bindings& max) {
  GraphRun fused = run;
  GraphRun lowered = run;
  auto a = test::run_graph(g, fused, max, false);
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().message);
  auto b = test::run_graph(g, lowered, max, true);
  EXPECT_TRUE(b.ok()) << (b.ok() ? "" : b.error().message);
  if (!a.ok() || !b.ok()) return {};
  return {fused.outputs[0], lowered.outputs[0]};
}

TEST(Composites, RmsNormMatchesFormulaAndDecomposition) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(16)}, DType::F32);
  auto w = b.input("w", graph::make_shape({16}), DType::F32);
  b.output("y", b.rms_norm(x, w, 1e-5f));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  GraphRun run;
  run.inputs["x"] = test::random_floats(3 * 16, 1);
  run.inputs["w"] = test::random_floats(16, 2);
  run.bind = bindings(3, 0);
  auto [fused, lowered] = both_ways(*g, run, bindings(4, 0));
  ASSERT_EQ(fused.size(), 48u);
  EXPECT_LT(test::max_abs_diff(fused, lowered), 1e-5);
  const auto& xs = std::get<std::vector<float>>(run.inputs["x"]);
  const auto& ws = std::get<std::vector<float>>(run.inputs["w"]);
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 16; ++i) ss += xs[r * 16 + i] * xs[r * 16 + i];
    const double scale = 1.0 / std::sqrt(ss / 16 + 1e-5);
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(fused[r * 16 + i], xs[r * 16 + i] * scale * ws[i], 1e-5);
  }
}

struct RopeCase {
  graph::RopeMode mode;
  int n_rot;
  bool factors;
};

void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << (c.mode == graph::RopeMode::Normal ? "normal" : "neox") << " n_rot=" << c.n_rot
      << (c.factors ? " factors" : "");
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesFormulaAndDecomposition) {
  const RopeCase c = GetParam();
  const int64_t H = 3, D = 8, T = 4;
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(H), Dim::constant(D)}, DType::F32);
  auto pos = b.input("pos", Shape{Dim::symbol(Sym::T)}, DType::I32);
  std::optional<graph::Tensor> factors;
  if (c.factors) factors = b.input("factors", graph::make_shape({c.n_rot / 2}), DType::F32);
  const graph::RopeAttrs attrs{c.n_rot, c.mode, 500.0f, 0.5f};
  b.output("y", b.rope(x, pos, attrs, factors));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  GraphRun run;
  run.inputs["x"] = test::random_floats(T * H * D, 3);
  run.inputs["pos"] = std::vector<int32_t>{0, 7, 3, 100};
  if (c.factors) run.inputs["factors"] = std::vector<float>{1.0f, 8.0f, 2.5f, 4.0f};
  run.bind = bindings(T, 0);
  auto [fused, lowered] = both_ways(*g, run, bindings(T, 0));
  ASSERT_EQ(fused.size(), static_cast<size_t>(T * H * D));
  EXPECT_LT(test::max_abs_diff(fused, lowered), 1e-5);

  const auto& xs = std::get<std::vector<float>>(run.inputs["x"]);
  const std::vector<int32_t> ps{0, 7, 3, 100};
  const std::vector<float> fs{1.0f, 8.0f, 2.5f, 4.0f};
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float* xi = &xs[static_cast<size_t>((t * H + h) * D)];
      const float* yo = &fused[static_cast<size_t>((t * H + h) * D)];
      for (int i = 0; i < c.n_rot / 2; ++i) {
        double theta = ps[static_cast<size_t>(t)] * 0.5 * std::pow(500.0, -2.0 * i / c.n_rot);
        if (c.factors) theta /= fs[static_cast<size_t>(i)];
        const int a = c.mode == graph::RopeMode::Normal ? 2 * i : i;
        const int bb = c.mode == graph::RopeMode::Normal ? 2 * i + 1 : i + c.n_rot / 2;
        EXPECT_NEAR(yo[a], xi[a] * std::cos(theta) - xi[bb] * std::sin(theta), 2e-5);
        EXPECT_NEAR(yo[bb], xi[a] * std::sin(theta) + xi[bb] * std::cos(theta), 2e-5);
      }
      for (int64_t d = c.n_rot; d < D; ++d) EXPECT_EQ(yo[d], xi[d]);
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, RopeTest,
                         ::testing::Values(RopeCase{graph::RopeMode::Normal, 8, false},
                                           RopeCase{graph::RopeMode::NeoX, 8, false},
                                           RopeCase{graph::RopeMode::Normal, 4, true},
                                           RopeCase{graph::RopeMode::NeoX, 6, false}));

// Attention after a kv_write, with GQA, a cached prefix, and garbage (NaN) in rows past S that
// must never be read; with `with_sinks`, a per-head sink logit in each row's normaliser.
void attention_over_cache(bool with_sinks) {
  const int64_t H = 4, Hkv = 2, D = 8, C = 12, T = 3, past = 5;
  Builder b;
  const Shape tok{Dim::symbol(Sym::T)};
  auto q = b.input("q", Shape{Dim::symbol(Sym::T), Dim::constant(H), Dim::constant(D)}, DType::F32);
  auto k = b.input("k", Shape{Dim::symbol(Sym::T), Dim::constant(Hkv), Dim::constant(D)}, DType::F32);
  auto v = b.input("v", Shape{Dim::symbol(Sym::T), Dim::constant(Hkv), Dim::constant(D)}, DType::F32);
  auto pos = b.input("pos", tok, DType::I32);
  auto slots = b.input("slots", tok, DType::I32);
  auto kc = b.state("kc", graph::make_shape({C, Hkv, D}), DType::F32);
  auto vc = b.state("vc", graph::make_shape({C, Hkv, D}), DType::F32);
  auto seq = b.input("seq", tok, DType::I32);
  auto table = b.input("table", graph::make_shape({1, C / 4}), DType::I32);
  auto k2 = b.kv_write(kc, k, slots);
  auto v2 = b.kv_write(vc, v, slots);
  b.update_state(kc, k2);
  b.update_state(vc, v2);
  std::optional<graph::Tensor> sinks;
  if (with_sinks) sinks = b.input("sinks", graph::make_shape({H}), DType::F32);
  b.output("o", b.attention(q, k2, v2, pos, seq, table,
                            graph::AttentionAttrs{0.35f, Dim::symbol(Sym::S), 0, 0.0f, 4}, sinks));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;

  GraphRun run;
  run.inputs["q"] = test::random_floats(T * H * D, 4);
  run.inputs["k"] = test::random_floats(T * Hkv * D, 5);
  run.inputs["v"] = test::random_floats(T * Hkv * D, 6);
  run.inputs["pos"] = std::vector<int32_t>{5, 6, 7};
  run.inputs["slots"] = std::vector<int32_t>{5, 6, 7};
  std::vector<float> kcache = test::random_floats(C * Hkv * D, 7),
                     vcache = test::random_floats(C * Hkv * D, 8);
  for (int64_t i = (past + T) * Hkv * D; i < C * Hkv * D; ++i)
    kcache[static_cast<size_t>(i)] = vcache[static_cast<size_t>(i)] = NAN;
  run.states["kc"] = kcache;
  run.states["vc"] = vcache;
  run.inputs["seq"] = std::vector<int32_t>(T, 0);
  run.inputs["table"] = test::identity_table(C / 4);
  const std::vector<float> sink_logits{2.5f, -1.0f, 0.0f, 4.0f};
  if (with_sinks) run.inputs["sinks"] = sink_logits;
  run.bind = bindings(T, past + T);
  auto [fused, lowered] = both_ways(*g, run, bindings(8, C));
  ASSERT_EQ(fused.size(), static_cast<size_t>(T * H * D));
  EXPECT_LT(test::max_abs_diff(fused, lowered), 1e-5);

  // Naive: the cache after the write, query t at position 5+t sees rows 0..5+t.
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
      const int64_t hk = h / (H / Hkv);
      const int64_t n = past + t + 1;
      std::vector<double> w(static_cast<size_t>(n));
      double mx = -1e300, sum = 0;
      for (int64_t s = 0; s < n; ++s) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d)
          dot += qs[static_cast<size_t>((t * H + h) * D + d)] *
                 kcache[static_cast<size_t>((s * Hkv + hk) * D + d)];
        w[static_cast<size_t>(s)] = 0.35 * dot;
        mx = std::max(mx, w[static_cast<size_t>(s)]);
      }
      if (with_sinks) mx = std::max(mx, double{sink_logits[static_cast<size_t>(h)]});
      for (auto& x : w) sum += (x = std::exp(x - mx));
      if (with_sinks) sum += std::exp(sink_logits[static_cast<size_t>(h)] - mx);
      for (int64_t d = 0; d < D; ++d) {
        double o = 0;
        for (int64_t s = 0; s < n; ++s)
          o += w[static_cast<size_t>(s)] / sum * vcache[static_cast<size_t>((s * Hkv + hk) * D + d)];
        EXPECT_NEAR(fused[static_cast<size_t>((t * H + h) * D + d)], o, 1e-5) << "t=" << t << " h=" << h;
      }
    }
}

TEST(Composites, AttentionOverCacheMatchesNaiveAndDecomposition) { attention_over_cache(false); }
TEST(Composites, AttentionWithSinksMatchesNaiveAndDecomposition) { attention_over_cache(true); }

TEST(Composites, SwigluAndSiluMatchFormulaAndDecomposition) {
  Builder b;
  auto g_in = b.input("g", graph::make_shape({2, 9}), DType::F32);
  auto u_in = b.input("u", graph::make_shape({2, 9}), DType::F32);
  b.output("y", b.swiglu(g_in, u_in));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  GraphRun run;
  run.inputs["g"] = test::random_floats(18, 9, 3.0f);
  run.inputs["u"] = test::random_floats(18, 10);
  auto [fused, lowered] = both_ways(*g, run, bindings(1, 0));
  ASSERT_EQ(fused.size(), 18u);
  EXPECT_LT(test::max_abs_diff(fused, lowered), 1e-6);
  const auto& gs = std::get<std::vector<float>>(run.inputs["g"]);
  const auto& us = std::get<std::vector<float>>(run.inputs["u"]);
  for (size_t i = 0; i < 18; ++i) EXPECT_NEAR(fused[i], gs[i] / (1 + std::exp(-gs[i])) * us[i], 1e-6);
}

TEST(Composites, EmbeddingOfF16TableMatchesDecomposition) {
  Builder b;
  auto table = b.parameter("table", graph::make_shape({4, 3}), DType::F16);
  auto ids = b.input("ids", Shape{Dim::symbol(Sym::T)}, DType::I32);
  b.output("y", b.embedding(table, ids));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  // f16 bits of 0, 1, 2, ..., 11
  const std::vector<uint16_t> bits{0x0000, 0x3C00, 0x4000, 0x4200, 0x4400, 0x4500,
                                   0x4600, 0x4700, 0x4800, 0x4880, 0x4900, 0x4980};
  GraphRun run;
  run.inputs["ids"] = std::vector<int32_t>{3, 0, 3};
  run.bind = bindings(3, 0);
  for (bool decompose : {false, true}) {
    GraphRun r = run;
    auto st = test::run_graph(*g, r, bindings(4, 0), decompose, {{"table", bits.data()}});
    ASSERT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(r.outputs[0], (std::vector<float>{9, 10, 11, 0, 1, 2, 9, 10, 11}));
  }
  GraphRun bad = run;
  bad.inputs["ids"] = std::vector<int32_t>{4, 0, 0};
  auto st = test::run_graph(*g, bad, bindings(4, 0), false, {{"table", bits.data()}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("token id 4 outside"), std::string::npos) << st.error().message;
}

TEST(Composites, KvWriteCountsRowsAndRejectsSlotsOutsideTheCache) {
  Builder b;
  auto rows = b.input("rows", Shape{Dim::symbol(Sym::T), Dim::constant(2)}, DType::F32);
  auto slots = b.input("slots", Shape{Dim::symbol(Sym::T)}, DType::I32);
  auto cache = b.state("cache", graph::make_shape({4, 2}), DType::F32);
  auto written = b.kv_write(cache, rows, slots);
  b.update_state(cache, written);
  b.output("sum", b.reduce_sum(b.reshape(written, graph::make_shape({8}))));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  GraphRun run;
  run.inputs["rows"] = std::vector<float>{1, 2, 3, 4};
  run.inputs["slots"] = std::vector<int32_t>{2, 0};
  run.states["cache"] = std::vector<float>(8, 0.5f);
  run.bind = bindings(2, 0);
  ASSERT_TRUE(test::run_graph(*g, run, bindings(2, 0), false).ok());
  EXPECT_EQ(std::get<std::vector<float>>(run.states["cache"]),
            (std::vector<float>{3, 4, 0.5f, 0.5f, 1, 2, 0.5f, 0.5f}));
  EXPECT_EQ(run.stats.state_rows_written, (std::vector<uint64_t>{2}));
  EXPECT_FLOAT_EQ(run.outputs[0][0], 12.0f);
  run.inputs["slots"] = std::vector<int32_t>{4, 0};
  auto st = test::run_graph(*g, run, bindings(2, 0), false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::CapacityExceeded);
}

}  // namespace
}  // namespace glass
