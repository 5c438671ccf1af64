// cpu row kernels at every ISA tier this machine runs against the ref backend, on seeded inputs
// with odd lengths (vector tails). Tolerances: add / mul / rope / embedding / kv_write are the same
// float operations in the same order: exact. rms_norm sums in f32 lanes (ref: double): 1e-5.
// silu uses a polynomial e^x (about 1 ulp): 1e-5 relative to the values (|g| up to ~12).
#include <gtest/gtest.h>

#include "backend/cpu/cpu_test_support.h"
#include "backend/ref/ref_backend.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::Builder;
using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;
using testing::bindings;

// Runs g on ref and on cpu at every tier; returns the largest max-abs difference of output 0.
double worst_diff(const graph::Graph& g, const test::GraphRun& run, const graph::Bindings& max,
                  const std::map<std::string, const void*>& weights = {}) {
  test::GraphRun want = run;
  auto st = testing::run_on(ref::RefBackend{}, g, want, max, weights);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  double worst = 0;
  for (Isa isa : testing::runnable_isas()) {
    test::GraphRun got = run;
    auto s = testing::run_on(CpuBackend({3, isa}), g, got, max, weights);
    EXPECT_TRUE(s.ok()) << isa_name(isa) << ": " << (s.ok() ? "" : s.error().message);
    if (!s.ok() || !st.ok()) return 1e9;
    EXPECT_EQ(got.states, want.states) << isa_name(isa);
    EXPECT_EQ(got.stats.state_rows_written, want.stats.state_rows_written);
    worst = std::max(worst, test::max_abs_diff(got.outputs[0], want.outputs[0]));
  }
  return worst;
}

TEST(CpuKernels, RmsNorm) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(67)}, DType::F32);
  auto w = b.input("w", graph::make_shape({67}), DType::F32);
  b.output("y", b.rms_norm(x, w, 1e-5f));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(5 * 67, 1);
  run.inputs["w"] = test::random_floats(67, 2);
  run.bind = bindings(5, 0);
  EXPECT_LE(worst_diff(*g, run, bindings(8, 0)), 1e-5);
}

TEST(CpuKernels, SwigluAndSilu) {
  for (bool gated : {true, false}) {
    Builder b;
    auto gi = b.input("g", Shape{Dim::symbol(Sym::T), Dim::constant(100)}, DType::F32);
    auto ui = b.input("u", Shape{Dim::symbol(Sym::T), Dim::constant(100)}, DType::F32);
    b.output("y", gated ? b.swiglu(gi, ui) : b.silu(gi) + ui);
    auto g = b.finish();
    ASSERT_TRUE(g.ok());
    test::GraphRun run;
    run.inputs["g"] = test::random_floats(3 * 100, 3, 4.0f);
    run.inputs["u"] = test::random_floats(3 * 100, 4);
    run.bind = bindings(3, 0);
    EXPECT_LE(worst_diff(*g, run, bindings(3, 0)), 1e-4) << gated;
  }
}

TEST(CpuKernels, AddAndMulBroadcast) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(3), Dim::constant(37)}, DType::F32);
  auto y = b.input("y", Shape{Dim::symbol(Sym::T), Dim::constant(3), Dim::constant(37)}, DType::F32);
  auto row = b.input("row", graph::make_shape({37}), DType::F32);
  auto col = b.input("col", graph::make_shape({3, 1}), DType::F32);
  b.output("o", ((x + y) * row + col) * x);
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(4 * 3 * 37, 5);
  run.inputs["y"] = test::random_floats(4 * 3 * 37, 6);
  run.inputs["row"] = test::random_floats(37, 7);
  run.inputs["col"] = test::random_floats(3, 8);
  run.bind = bindings(4, 0);
  EXPECT_EQ(worst_diff(*g, run, bindings(6, 0)), 0.0);
}

TEST(CpuKernels, RopeAllModesInPlace) {
  for (auto mode : {graph::RopeMode::Normal, graph::RopeMode::NeoX})
    for (int n_rot : {8, 6})
      for (bool factors : {false, true}) {
        const int64_t H = 3, D = 8, T = 4;
        Builder b;
        auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(H * D)}, DType::F32);
        auto pos = b.input("pos", Shape{Dim::symbol(Sym::T)}, DType::I32);
        std::optional<graph::Tensor> f;
        if (factors) f = b.input("factors", graph::make_shape({n_rot / 2}), DType::F32);
        // x * 1 is an intermediate rope may overwrite; the reshape aliases it.
        auto xs =
            b.reshape(x * b.scalar(1.0f), Shape{Dim::symbol(Sym::T), Dim::constant(H), Dim::constant(D)});
        b.output("y", b.rope(xs, pos, graph::RopeAttrs{n_rot, mode, 500.0f, 0.5f}, f));
        auto g = b.finish();
        ASSERT_TRUE(g.ok()) << g.error().message;
        test::GraphRun run;
        run.inputs["x"] = test::random_floats(T * H * D, 3);
        run.inputs["pos"] = std::vector<int32_t>{0, 7, 3, 100};
        if (factors) run.inputs["factors"] = std::vector<float>(static_cast<size_t>(n_rot / 2), 2.5f);
        run.bind = bindings(T, 0);
        EXPECT_EQ(worst_diff(*g, run, bindings(T, 0)), 0.0) << n_rot << factors;
      }
}

TEST(CpuKernels, EmbeddingEveryStorageType) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_A,
                  DType::IQ4_NL, DType::IQ4_XS}) {
    const int64_t V = 7, D = 256;
    Builder b;
    auto table = b.parameter("table", graph::make_shape({V, D}), t);
    auto ids = b.input("ids", Shape{Dim::symbol(Sym::T)}, DType::I32);
    b.output("y", b.embedding(table, ids));
    auto g = b.finish();
    ASSERT_TRUE(g.ok());
    const auto data = testing::random_weights(t, V, D, 9);
    test::GraphRun run;
    run.inputs["ids"] = std::vector<int32_t>{3, 0, 6, 3};
    run.bind = bindings(4, 0);
    EXPECT_EQ(worst_diff(*g, run, bindings(4, 0), {{"table", data.data()}}), 0.0) << graph::dtype_name(t);
    run.inputs["ids"] = std::vector<int32_t>{7, 0, 0, 0};
    auto st = testing::run_on(CpuBackend({2, {}}), *g, run, bindings(4, 0), {{"table", data.data()}});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("token id 7 outside"), std::string::npos) << st.error().message;
  }
}

TEST(CpuKernels, MissingKernelFailsAtCompileNamingOpAndDtypes) {
  Builder b;
  auto w = b.parameter("blk.0.ffn_up.weight", graph::make_shape({4, 32}), DType::Q4_0);
  b.output("rows", b.cast(b.slice(w, 0, 0, Dim::constant(2)), DType::F32));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  std::vector<uint8_t> blocks(4 * 18, 0);
  auto plan = CpuBackend({1, {}}).compile(
      *g, [&](const graph::Node&) -> Result<const void*> { return blocks.data(); }, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::Unsupported);
  EXPECT_NE(plan.error().message.find("cpu: no kernel for slice(q4_0)"), std::string::npos)
      << plan.error().message;
}

}  // namespace
}  // namespace glass::backend::cpu
