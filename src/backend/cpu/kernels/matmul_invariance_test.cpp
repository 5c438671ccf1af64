// Batch invariance of the cpu matmul: a row's result does not depend on how many other rows its
// step holds. Each row computed alone (a plan compiled for one token, as the decode plan is) is
// compared bitwise with the same row among M - 1 others (a plan for 64). Where it holds today is
// pinned here so that it cannot regress; where it does not (below), a request's logits depend on
// its batch (docs/performance.md, batch invariance):
//   - F16 / BF16 with repacked weights: the 16-row decode layout and the prefill kernel sum k in
//     different orders, at every M >= 2;
//   - k-quants from M = 16, where the packed prefill path scales each 16- or 32-weight chunk in f32
//     instead of each 256-weight super-block;
//   - legacy quants without repacking, from M = 4 on AVX-512 (its one-row kernel sums 512 bits at a
//     time) and from M = 16 on AVX2 (the packed path), where Q8_0 has no 16-row layout to repack to.
// Under CompileOptions::batch_invariant every type the plan repacks, and AVX2's row-major Q8_0, is
// invariant at every M on every tier.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <climits>
#include <cstring>

#include "backend/cpu/cpu_test_support.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::DType;

struct Expectation {
  DType type;
  bool repack;
  int64_t invariant_below;  // rows per step up to which a row equals its solo result (INT64_MAX: every M)
};

// Each case's rows alone and among M - 1 others, on one tier; compares the M below invariant_below.
void expect_rows_equal_solo(Isa isa, const Expectation& c, bool batch_invariant) {
  const int64_t N = 96, K = 512, kMaxM = 64;
  const auto xs = test::random_floats(static_cast<size_t>(kMaxM * K), 12);
  SCOPED_TRACE(fmt::format("{} repack {} on {}{}", graph::dtype_name(c.type), c.repack, isa_name(isa),
                           batch_invariant ? " batch_invariant" : ""));
  graph::Builder b;
  auto x = b.input("x", graph::Shape{graph::Dim::symbol(graph::Sym::T), graph::Dim::constant(K)}, DType::F32);
  b.output("y", b.matmul(x, b.parameter("w", graph::make_shape({N, K}), c.type)));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  const auto wdata = testing::random_weights(c.type, N, K, 11);
  const std::map<std::string, const void*> weights{{"w", wdata.data()}};
  CpuBackend cpu({2, isa, c.repack});
  std::vector<float> alone(static_cast<size_t>(kMaxM * N));
  for (int64_t m = 0; m < kMaxM; ++m) {
    test::GraphRun run;
    run.inputs["x"] = std::vector<float>(xs.begin() + m * K, xs.begin() + (m + 1) * K);
    run.bind = testing::bindings(1, 0);
    ASSERT_TRUE(testing::run_on(cpu, *g, run, testing::bindings(1, 0), weights, true, batch_invariant).ok());
    std::memcpy(alone.data() + m * N, run.outputs[0].data(), N * sizeof(float));
  }
  size_t compared = 0;
  for (int64_t M : {2, 3, 4, 5, 7, 15, 16, 17, 33, 64}) {
    if (M >= c.invariant_below) continue;
    test::GraphRun run;
    run.inputs["x"] = std::vector<float>(xs.begin(), xs.begin() + M * K);
    run.bind = testing::bindings(M, 0);
    ASSERT_TRUE(
        testing::run_on(cpu, *g, run, testing::bindings(kMaxM, 0), weights, true, batch_invariant).ok());
    EXPECT_EQ(std::memcmp(run.outputs[0].data(), alone.data(), static_cast<size_t>(M * N) * sizeof(float)), 0)
        << "M = " << M;
    ++compared;
  }
  EXPECT_GE(compared, 2u);
}

TEST(CpuMatmulBatchInvariance, RowsEqualTheirSoloResultWhereTheKernelsAgree) {
  constexpr int64_t kAll = INT64_MAX;
  for (const Isa isa : testing::runnable_isas()) {
    // AVX2 has no 16-row Q8_0 layout: "repacked" Q8_0 runs the row-major kernel there.
    const int64_t q8_0_repacked = isa == Isa::Avx2 ? 16 : kAll;
    // The row-major kernels sum each row alike in any tile (legacy_rows_512 on AVX-512); the packed
    // prefill path, from 16 rows, scales its chunks in another order.
    const int64_t unrepacked = isa == Isa::Scalar ? kAll : 16;
    const Expectation cases[] = {
        {DType::F32, false, kAll},
        {DType::F32, true, kAll},
        {DType::F16, false, kAll},
        {DType::BF16, false, kAll},
        {DType::Q8_0, true, q8_0_repacked},
        {DType::Q4_0, true, kAll},
        {DType::Q4_1, true, kAll},
        {DType::Q5_0, true, kAll},
        {DType::Q5_1, true, kAll},
        {DType::Q2_K, true, 16},
        {DType::Q3_K, true, 16},
        {DType::Q4_K, true, 16},
        {DType::Q5_K, true, 16},
        {DType::Q6_K, true, 16},
        {DType::Q4_K, false, 16},
        {DType::Q6_K, false, 16},
        {DType::Q8_0, false, unrepacked},
        {DType::Q4_0, false, unrepacked},
        {DType::IQ4_NL, false, unrepacked},
        {DType::IQ4_NL, true, isa >= Isa::Avx512 ? kAll : 16},  // iq4_nlx16; AVX2's packed path sums apart
        {DType::IQ4_XS, false, unrepacked},
        {DType::IQ4_XS, true, 16},  // iq4_xsx16 on AVX-512
        {DType::MXFP4, false, unrepacked},
    };
    for (const Expectation& c : cases) expect_rows_equal_solo(isa, c, false);
  }
}

// batch_invariant: the matmul's part of it (the plan also keeps F16/BF16 unrepacked).
TEST(CpuMatmulBatchInvariance, UnderBatchInvariantEveryRowEqualsItsSoloResult) {
  constexpr int64_t kAll = INT64_MAX;
  for (const Isa isa : testing::runnable_isas()) {
    const Expectation cases[] = {
        {DType::F32, true, kAll},     {DType::F16, false, kAll},    {DType::BF16, false, kAll},
        {DType::Q8_0, true, kAll},    {DType::Q4_0, true, kAll},    {DType::Q4_1, true, kAll},
        {DType::Q5_0, true, kAll},    {DType::Q5_1, true, kAll},    {DType::Q2_K, true, kAll},
        {DType::Q3_K, true, kAll},    {DType::Q4_K, true, kAll},    {DType::Q5_K, true, kAll},
        {DType::Q6_K, true, kAll},    {DType::IQ4_NL, false, kAll}, {DType::IQ4_NL, true, kAll},
        {DType::IQ4_XS, false, kAll}, {DType::MXFP4, false, kAll},
    };
    for (const Expectation& c : cases) expect_rows_equal_solo(isa, c, true);
  }
}

}  // namespace
}  // namespace glass::backend::cpu
