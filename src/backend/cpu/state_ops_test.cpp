// The ops over a sequence's state (short_conv; delta_net and delta_net_state) on the cpu backend
// at every tier against the ref backend's definitions, on a step that mixes sequences: two prompt
// chunks and a decode token, each sequence with its own slot and block table. The cpu plan fuses
// delta_net with its delta_net_state (one recurrence); the states it leaves equal the ref's.
#include <gtest/gtest.h>

#include "backend/cpu/cpu_test_support.h"
#include "graph/builder.h"
#include "support/graph_runner.h"

namespace glass::backend::cpu {
namespace {

using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;

constexpr int64_t kHk = 2, kHv = 4, kD = 16, kR = 4;

struct StepData {
  std::vector<int32_t> seq{0, 0, 0, 0, 0, 2, 1, 1, 1};  // a chunk of 5, a decode token, a chunk of 3
  std::vector<int32_t> pos{0, 1, 2, 3, 4, 6, 3, 4, 5};
  std::vector<int32_t> slots{2, 0, 3};  // sequence id -> its state slot
};

graph::Graph delta_graph(bool grouped) {
  graph::Builder b;
  const Dim T = Dim::symbol(Sym::T);
  auto heads = [&](const char* name, int64_t h) {
    return b.input(name, Shape{T, Dim::constant(h), Dim::constant(kD)}, DType::F32);
  };
  const auto q = heads("q", kHk), k = heads("k", kHk), v = heads("v", kHv);
  const auto g = b.input("g", Shape{T, Dim::constant(kHv)}, DType::F32);
  const auto beta = b.input("beta", Shape{T, Dim::constant(kHv)}, DType::F32);
  const auto seq = b.input("seq", Shape{T}, DType::I32);
  const auto slots = b.input("slots", Shape{Dim::symbol(Sym::N)}, DType::I32);
  const auto state =
      b.state("state", Shape{Dim::symbol(Sym::R), Dim::constant(kHv), Dim::constant(kD), Dim::constant(kD)},
              DType::F32);
  const graph::DeltaNetAttrs attrs{.grouped_heads = grouped};
  const auto o = b.delta_net(q, k, v, g, beta, state, seq, slots, attrs);
  b.update_state(state, b.delta_net_state(state, k, v, g, beta, seq, slots, o, attrs));
  b.output("o", o);
  auto out = b.finish();
  EXPECT_TRUE(out.ok());
  return std::move(*out);
}

test::GraphRun delta_run(const StepData& s) {
  const auto T = static_cast<int64_t>(s.seq.size());
  test::GraphRun run;
  auto put = [&](const char* name, int64_t n, uint32_t seed, float scale) {
    run.inputs[name] = test::random_floats(static_cast<size_t>(n), seed, scale);
  };
  put("q", T * kHk * kD, 1, 0.3f);
  put("k", T * kHk * kD, 2, 0.3f);
  put("v", T * kHv * kD, 3, 1.0f);
  put("g", T * kHv, 4, 0.2f);
  put("beta", T * kHv, 5, 0.5f);
  run.inputs["seq"] = s.seq;
  run.inputs["slots"] = s.slots;
  run.states["state"] = test::random_floats(static_cast<size_t>(kR * kHv * kD * kD), 6, 0.2f);
  run.bind[Sym::T] = T;
  run.bind[Sym::N] = static_cast<int64_t>(s.slots.size());
  run.bind[Sym::R] = kR;
  return run;
}

graph::Bindings delta_max() {
  graph::Bindings m;
  m[Sym::T] = 16, m[Sym::N] = 8, m[Sym::R] = 16, m[Sym::S] = 16;
  return m;
}

TEST(StateOps, DeltaNetOnEveryTierEqualsTheRefDefinition) {
  for (bool grouped : {false, true}) {
    const graph::Graph g = delta_graph(grouped);
    test::GraphRun want = delta_run(StepData{});
    ASSERT_TRUE(test::run_graph(g, want, delta_max(), /*decompose=*/false).ok());
    for (Isa isa : testing::runnable_isas()) {
      test::GraphRun got = delta_run(StepData{});
      ASSERT_TRUE(testing::run_on(CpuBackend({2, isa}), g, got, delta_max()).ok()) << isa_name(isa);
      EXPECT_LT(test::max_abs_diff(got.outputs[0], want.outputs[0]), 1e-5) << isa_name(isa) << grouped;
      EXPECT_LT(test::max_abs_diff(std::get<std::vector<float>>(got.states["state"]),
                                   std::get<std::vector<float>>(want.states["state"])),
                1e-5)
          << isa_name(isa) << " grouped " << grouped;
    }
    // The slot no sequence uses (1) is left as it was.
    test::GraphRun fresh = delta_run(StepData{});
    const auto& before = std::get<std::vector<float>>(fresh.states["state"]);
    const auto& after = std::get<std::vector<float>>(want.states["state"]);
    const size_t per = static_cast<size_t>(kHv * kD * kD);
    EXPECT_TRUE(std::equal(before.begin() + per, before.begin() + 2 * per, after.begin() + per));
    EXPECT_FALSE(std::equal(before.begin(), before.begin() + per, after.begin()));  // sequence 1's slot 0
  }
}

TEST(StateOps, DeltaNetRefusesInterleavedSequencesAndBadSlots) {
  const graph::Graph g = delta_graph(false);
  StepData interleaved;
  interleaved.seq = {0, 1, 0, 1, 1, 1, 1, 1, 1};
  test::GraphRun run = delta_run(interleaved);
  auto st = testing::run_on(CpuBackend({2, {}}), g, run, delta_max());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("not consecutive"), std::string::npos) << st.error().message;
  StepData bad;
  bad.slots = {2, 9, 3};  // slot 9 of a 4-slot pool
  test::GraphRun run2 = delta_run(bad);
  auto st2 = test::run_graph(g, run2, delta_max(), false);
  ASSERT_FALSE(st2.ok());
  EXPECT_NE(st2.error().message.find("no state slot"), std::string::npos) << st2.error().message;
}

TEST(StateOps, ShortConvOnCpuEqualsRefAndItsDecomposition) {
  graph::Builder b;
  const Dim T = Dim::symbol(Sym::T);
  constexpr int64_t kC = 24, kL = 3, kB = 4;
  const auto x = b.input("x", Shape{T, Dim::constant(kC)}, DType::F32);
  const auto slots = b.input("slots", Shape{T}, DType::I32);
  const auto pos = b.input("pos", Shape{T}, DType::I32);
  const auto seq = b.input("seq", Shape{T}, DType::I32);
  const auto table = b.input("table", Shape{Dim::symbol(Sym::N), Dim::symbol(Sym::M)}, DType::I32);
  const auto w = b.input("w", Shape{Dim::constant(kC), Dim::constant(kL)}, DType::F32);
  const auto cache = b.state("cache", Shape{Dim::symbol(Sym::W), Dim::constant(kC)}, DType::F32);
  const auto written = b.kv_write(cache, x, slots);
  b.update_state(cache, written);
  b.output("y", b.short_conv(written, w, pos, seq, table, graph::BlockGatherAttrs{kB, Dim::symbol(Sym::S)}));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  // Sequence 0 holds positions 0..1 in block 1 and gets 2..4; sequence 1 holds 0..5 (blocks 4, 5)
  // and gets 6: its taps read positions 4, 5 from block 5.
  auto make = [&] {
    test::GraphRun run;
    run.inputs["x"] = test::random_floats(4 * kC, 11);
    run.inputs["w"] = test::random_floats(kC * kL, 12);
    run.inputs["slots"] =
        std::vector<int32_t>{6, 7, 8, 22};  // block 1 rows 2, 3; block 2 row 0; block 5 row 2
    run.inputs["pos"] = std::vector<int32_t>{2, 3, 4, 6};
    run.inputs["seq"] = std::vector<int32_t>{0, 0, 0, 1};
    run.inputs["table"] = std::vector<int32_t>{1, 2, -1, 4, 5, -1};
    run.states["cache"] = test::random_floats(8 * kB * kC, 13);
    run.bind[Sym::T] = 4, run.bind[Sym::N] = 2, run.bind[Sym::M] = 3, run.bind[Sym::W] = 8 * kB;
    run.bind[Sym::S] = 7;
    return run;
  };
  graph::Bindings max;
  max[Sym::T] = 8, max[Sym::N] = 4, max[Sym::M] = 4, max[Sym::W] = 64, max[Sym::S] = 16;
  test::GraphRun want = make(), decomposed = make();
  ASSERT_TRUE(test::run_graph(*g, want, max, false).ok());
  ASSERT_TRUE(test::run_graph(*g, decomposed, max, true).ok());
  EXPECT_LT(test::max_abs_diff(decomposed.outputs[0], want.outputs[0]), 1e-6);
  for (Isa isa : testing::runnable_isas()) {
    test::GraphRun got = make();
    ASSERT_TRUE(testing::run_on(CpuBackend({2, isa}), *g, got, max).ok()) << isa_name(isa);
    EXPECT_LT(test::max_abs_diff(got.outputs[0], want.outputs[0]), 1e-6) << isa_name(isa);
  }
  // Position 0's taps before it read zeros: token 0 (position 2) sums all three taps; a token at
  // position 0 would use its own only. Spot-check token 0 channel 0 against the definition.
  const auto& xs = std::get<std::vector<float>>(want.inputs["x"]);
  const auto& ws = std::get<std::vector<float>>(want.inputs["w"]);
  test::GraphRun fresh = make();
  const auto& c0 = std::get<std::vector<float>>(fresh.states["cache"]);
  const float expect = ws[0] * c0[1 * kB * kC + 0 * kC] + ws[1] * c0[(1 * kB + 1) * kC] + ws[2] * xs[0];
  EXPECT_NEAR(want.outputs[0][0], expect, 1e-6);
}

}  // namespace
}  // namespace glass::backend::cpu
