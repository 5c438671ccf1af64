// The cpu moe kernel at every ISA tier this machine runs against the ref backend's kernel, for f32,
// f16, q8_0 and q4_k experts, at one token (decode) and 37 tokens (prefill: several tokens per
// expert). Tolerances as for matmul (matmul_test.cpp): NMSE 1e-10 for f32 experts (float summation
// order; outputs reach hundreds here), 2e-4 for converted activations (f16 / 8-bit blocks, as
// llama.cpp does). Also: unchosen experts holding NaN never reach the output.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

constexpr int64_t kD = 256, kF = 256, kE = 6;

// gemma4: gate and up fused in one [E, 2F, D] tensor, GeGLU, a per-expert output scale.
// gpt_oss: expert biases and the clamped SwiGLU.
graph::Graph moe_graph(DType wt, bool gemma4 = false, bool gpt_oss = false) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(kD)}, DType::F32);
  auto p = b.input("p", Shape{Dim::symbol(Sym::T), Dim::constant(kE)}, DType::F32);
  auto down = b.parameter("down", graph::make_shape({kE, kD, kF}), wt);
  if (gpt_oss) {
    auto gate = b.parameter("gate", graph::make_shape({kE, kF, kD}), wt);
    auto up = b.parameter("up", graph::make_shape({kE, kF, kD}), wt);
    auto gb = b.parameter("gate_b", graph::make_shape({kE, kF}), DType::F32);
    auto ub = b.parameter("up_b", graph::make_shape({kE, kF}), DType::F32);
    auto db = b.parameter("down_b", graph::make_shape({kE, kD}), DType::F32);
    b.output("y", b.moe_biased(x, p, gate, up, down, gb, ub, db,
                               graph::MoeAttrs{2, true, graph::MoeActivation::SwiGluOai, false}));
  } else if (gemma4) {
    auto gate_up = b.parameter("gate", graph::make_shape({kE, 2 * kF, kD}), wt);
    auto scale = b.parameter("scale", graph::make_shape({kE}), DType::F32);
    b.output("y", b.moe(x, p, gate_up, gate_up, down,
                        graph::MoeAttrs{2, true, graph::MoeActivation::GeGlu, true}, scale));
  } else {
    auto gate = b.parameter("gate", graph::make_shape({kE, kF, kD}), wt);
    auto up = b.parameter("up", graph::make_shape({kE, kF, kD}), wt);
    b.output("y", b.moe(x, p, gate, up, down, graph::MoeAttrs{2, true}));
  }
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return *g;
}

// Softmax rows of random logits.
std::vector<float> probabilities(int64_t T, uint32_t seed) {
  std::vector<float> p = test::random_floats(static_cast<size_t>(T * kE), seed, 2.0f);
  for (int64_t t = 0; t < T; ++t) {
    float* r = p.data() + t * kE;
    double sum = 0;
    for (int64_t e = 0; e < kE; ++e) sum += std::exp(r[e]);
    for (int64_t e = 0; e < kE; ++e) r[e] = static_cast<float>(std::exp(r[e]) / sum);
  }
  return p;
}

struct Case {
  DType wt;
  int64_t T;
  bool gemma4 = false;
  bool gpt_oss = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << graph::dtype_name(c.wt) << " T=" << c.T << (c.gemma4 ? " gemma4" : "");
}

class CpuMoe : public ::testing::TestWithParam<Case> {};

TEST_P(CpuMoe, MatchesRef) {
  const Case c = GetParam();
  const graph::Graph g = moe_graph(c.wt, c.gemma4, c.gpt_oss);
  const auto gate = testing::random_weights(c.wt, kE * kF * (c.gemma4 ? 2 : 1), kD, 21);
  const auto up = testing::random_weights(c.wt, kE * kF, kD, 22);
  const auto down = testing::random_weights(c.wt, kE * kD, kF, 23);
  const std::vector<float> scale{0.5f, 2.0f, -1.0f, 1.5f, 0.25f, 3.0f};
  const std::vector<float> gate_b = test::random_floats(kE * kF, 31, 2.0f),
                           up_b = test::random_floats(kE * kF, 32, 2.0f);
  const std::vector<float> down_b = test::random_floats(kE * kD, 33);
  const std::map<std::string, const void*> w{
      {"gate", gate.data()},     {"up", up.data()},     {"down", down.data()},    {"scale", scale.data()},
      {"gate_b", gate_b.data()}, {"up_b", up_b.data()}, {"down_b", down_b.data()}};
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(static_cast<size_t>(c.T * kD), 1);
  run.inputs["p"] = probabilities(c.T, 2);
  run.bind = bindings(c.T, 0);
  test::GraphRun want = run;
  auto st = testing::run_on(ref::RefBackend{}, g, want, bindings(40, 0), w);
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (Isa isa : testing::runnable_isas()) {
    test::GraphRun got = run;
    auto s = testing::run_on(CpuBackend({3, isa}), g, got, bindings(40, 0), w);
    ASSERT_TRUE(s.ok()) << isa_name(isa) << ": " << s.error().message;
    EXPECT_LT(testing::nmse(got.outputs[0], want.outputs[0]), c.wt == DType::F32 ? 1e-10 : 2e-4)
        << isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CpuMoe,
                         ::testing::Values(Case{DType::F32, 1}, Case{DType::F32, 37}, Case{DType::F16, 37},
                                           Case{DType::Q8_0, 1}, Case{DType::Q8_0, 37}, Case{DType::Q4_K, 37},
                                           Case{DType::F32, 37, true}, Case{DType::Q8_0, 1, true},
                                           Case{DType::Q4_K, 37, true}, Case{DType::F32, 37, false, true},
                                           Case{DType::Q8_0, 1, false, true},
                                           Case{DType::MXFP4, 1, false, true},
                                           Case{DType::MXFP4, 37, false, true}),
                         [](const auto& p) {
                           return std::string(graph::dtype_name(p.param.wt)) + "_T" +
                                  std::to_string(p.param.T) + (p.param.gemma4 ? "_gemma4" : "") +
                                  (p.param.gpt_oss ? "_gpt_oss" : "");
                         });

TEST(CpuMoeExperts, UnchosenExpertsAreNeverUsed) {
  const graph::Graph g = moe_graph(DType::F32);
  auto gate = test::random_floats(kE * kF * kD, 21, 0.05f);
  auto up = test::random_floats(kE * kF * kD, 22, 0.05f);
  auto down = test::random_floats(kE * kD * kF, 23, 0.05f);
  for (int64_t e = 2; e < kE; ++e) {  // only experts 0 and 1 are ever chosen
    std::fill_n(gate.begin() + e * kF * kD, kF * kD, std::numeric_limits<float>::quiet_NaN());
    std::fill_n(up.begin() + e * kF * kD, kF * kD, std::numeric_limits<float>::quiet_NaN());
    std::fill_n(down.begin() + e * kD * kF, kD * kF, std::numeric_limits<float>::quiet_NaN());
  }
  const std::map<std::string, const void*> w{{"gate", gate.data()}, {"up", up.data()}, {"down", down.data()}};
  const int64_t T = 9;
  std::vector<float> p(static_cast<size_t>(T * kE), 0.01f);
  for (int64_t t = 0; t < T; ++t) {
    p[static_cast<size_t>(t * kE)] = 0.5f;
    p[static_cast<size_t>(t * kE + 1)] = 0.3f + 0.01f * static_cast<float>(t);
  }
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(static_cast<size_t>(T * kD), 1);
  run.inputs["p"] = p;
  run.bind = bindings(T, 0);
  for (Isa isa : testing::runnable_isas()) {
    test::GraphRun got = run;
    auto s = testing::run_on(CpuBackend({3, isa}), g, got, bindings(T, 0), w);
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (float v : got.outputs[0]) ASSERT_TRUE(std::isfinite(v)) << isa_name(isa);
  }
}

}  // namespace
}  // namespace glass::backend::cpu
