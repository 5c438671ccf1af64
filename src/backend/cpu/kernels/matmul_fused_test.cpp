// The fused matmuls (matmul_add, matmul_swiglu, matmul_geglu) at every ISA tier this machine runs,
// built the way models write them (add(r, matmul(x, w)), swiglu / geglu of two matmuls) and fused
// by the cpu backend's rewrites, against:
//  * the same graph on the cpu backend with fusion off: the same gemm calls on the same activation
//    copy, so only float rounding of the epilogue may differ: NMSE <= 1e-12;
//  * the fused graph on the ref backend (which runs the fused ops' reference decomposition): NMSE
//    within matmul's ref tolerances (matmul_test.cpp): 1e-10 f32, 1e-6 f16, 2e-4 8-bit blocks.
// Activation rows 1 and 3 (decode split), 17 (packed path) and 70 (tiles); odd output widths; the
// residual in place (an intermediate whose last reader is the add) and not (a step input).
#include <gtest/gtest.h>

#include "backend/cpu/cpu_test_support.h"
#include "backend/ref/ref_backend.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::DType;
using graph::Op;

struct Case {
  Op op;  // the fused op the graph should become
  DType weight;
  int64_t M, N, K;
  bool residual_in_place = false;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << graph::op_name(c.op) << " " << graph::dtype_name(c.weight) << " M=" << c.M << " N=" << c.N
      << " K=" << c.K << (c.residual_in_place ? " in place" : "");
}

// The unfused expression: the model's way of writing it.
graph::Graph unfused_graph(const Case& c) {
  graph::Builder b;
  const graph::Dim T = graph::Dim::symbol(graph::Sym::T);
  auto x = b.input("x", graph::Shape{T, graph::Dim::constant(c.K)}, DType::F32);
  auto w = b.parameter("w", graph::make_shape({c.N, c.K}), c.weight);
  if (c.op == Op::MatMulAdd) {
    auto r = b.input("r", graph::Shape{T, graph::Dim::constant(c.N)}, DType::F32);
    // An arena intermediate whose last reader is the add can be overwritten by it.
    if (c.residual_in_place) r = r * r;
    // Not an output itself (outputs are written into the caller's buffer, never in place).
    const auto sum = b.add(r, b.matmul(x, w));
    b.output("y", sum * sum);
  } else {
    auto u = b.parameter("u", graph::make_shape({c.N, c.K}), c.weight);
    auto gate = b.matmul(x, w), up = b.matmul(x, u);
    b.output("y", c.op == Op::MatMulSwiGlu ? b.swiglu(gate, up) : b.geglu(gate, up));
  }
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return *g;
}

struct Compiled {
  std::unique_ptr<Plan> plan;
  std::vector<float> out;
};

Compiled run_cpu(const CpuBackend& cpu, const graph::Graph& g, bool fuse, const Case& c,
                 const std::map<std::string, const void*>& weights, const std::vector<float>& xs,
                 const std::vector<float>& rs) {
  CompileOptions opt;
  opt.max = testing::bindings(c.M + 5, 0);
  opt.fuse = fuse;
  auto plan = cpu.compile(
      g,
      [&](const graph::Node& n) -> Result<const void*> {
        auto it = weights.find(n.name);
        if (it == weights.end()) return make_error(ErrorCode::InvalidArgument, "test: no weight " + n.name);
        return it->second;
      },
      opt);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  if (!plan.ok()) return {};
  Compiled out{std::move(*plan), std::vector<float>(static_cast<size_t>(c.M * c.N), -1.0f)};
  const graph::Graph& cg = out.plan->compiled_graph();
  StepArgs args;
  args.bind = testing::bindings(c.M, 0);
  for (graph::NodeId id : cg.leaves(Op::Input))
    args.inputs.push_back(cg.node(id).name == "x" ? xs.data() : rs.data());
  args.outputs.push_back(out.out.data());
  auto ws = out.plan->make_workspace();
  StepStats stats;
  auto st = out.plan->run(args, *ws, stats);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out;
}

size_t count_op(const graph::Graph& g, Op op) {
  size_t n = 0;
  for (const graph::Node& nd : g.nodes) n += nd.op == op ? 1 : 0;
  return n;
}

class CpuFusedMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFusedMatmul, MatchesUnfusedAndRef) {
  const Case c = GetParam();
  const graph::Graph g = unfused_graph(c);
  const std::vector<uint8_t> wdata = testing::random_weights(c.weight, c.N, c.K, 31);
  const std::vector<uint8_t> udata = testing::random_weights(c.weight, c.N, c.K, 32);
  const std::map<std::string, const void*> weights{{"w", wdata.data()}, {"u", udata.data()}};
  const std::vector<float> xs = test::random_floats(static_cast<size_t>(c.M * c.K), 33);
  const std::vector<float> rs = test::random_floats(static_cast<size_t>(c.M * c.N), 34, 4.0f);
  const double ref_tol = c.weight == DType::F32    ? 1e-10
                         : c.weight == DType::F16  ? 1e-6
                         : c.weight == DType::BF16 ? 2e-5
                                                   : 2e-4;
  for (Isa isa : testing::runnable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    CpuBackend cpu({3, isa});
    const Compiled fused = run_cpu(cpu, g, true, c, weights, xs, rs);
    const Compiled plain = run_cpu(cpu, g, false, c, weights, xs, rs);
    ASSERT_TRUE(fused.plan && plain.plan);
    const graph::Graph& fg = fused.plan->compiled_graph();
    EXPECT_EQ(count_op(fg, c.op), 1u);
    EXPECT_EQ(count_op(fg, Op::MatMul), 0u);
    EXPECT_EQ(count_op(plain.plan->compiled_graph(), c.op), 0u);
    if (c.op == Op::MatMulAdd) {
      const auto& fired = fused.plan->rewrites().fired;
      const bool over_residual =
          std::find(fired.begin(), fired.end(), "in_place: matmul_add writes over its residual (1 node)") !=
          fired.end();
      EXPECT_EQ(over_residual, c.residual_in_place);
    }
    EXPECT_LE(testing::nmse(fused.out, plain.out), 1e-12);

    // The fused graph itself on the ref backend: its decomposition of the fused op.
    test::GraphRun want;
    want.inputs["x"] = xs;
    if (c.op == Op::MatMulAdd) want.inputs["r"] = rs;
    want.bind = testing::bindings(c.M, 0);
    ASSERT_TRUE(testing::run_on(ref::RefBackend{}, fg, want, testing::bindings(c.M, 0), weights).ok());
    EXPECT_LE(testing::nmse(fused.out, want.outputs[0]), ref_tol);
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (Op op : {Op::MatMulAdd, Op::MatMulSwiGlu, Op::MatMulGeGlu})
    for (DType t : {DType::F32, DType::F16, DType::Q4_0, DType::Q8_0, DType::Q4_K}) {
      const int64_t K =
          graph::traits(t).block_size == 256 ? 512 : (graph::traits(t).block_size == 32 ? 96 : 67);
      for (int64_t M : {1, 3, 17, 70}) {
        const int64_t N = M == 70 ? 133 : 37;
        v.push_back({op, t, M, N, K});
        if (op == Op::MatMulAdd) v.push_back({op, t, M, N, K, true});
      }
    }
  v.push_back({Op::MatMulAdd, DType::Q6_K, 3, 200, 256, true});
  // Decode tasks longer than one decode tile (1024 rows; the first of 3 threads' tasks takes a
  // sixth of the rows), with a row tail past the last 16-row group.
  v.push_back({Op::MatMulSwiGlu, DType::Q4_0, 1, 6805, 64});
  v.push_back({Op::MatMulAdd, DType::Q8_0, 2, 7000, 64, true});
  v.push_back({Op::MatMulSwiGlu, DType::BF16, 17, 9, 64});
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, CpuFusedMatmul, ::testing::ValuesIn(cases()));

// The rewrites leave a matmul alone when another node reads it, when gate and up read different
// activations, or when the residual would broadcast.
TEST(CpuFusionRewrites, FuseOnlyWhenTheProductHasNoOtherReader) {
  graph::Builder b;
  const graph::Dim T = graph::Dim::symbol(graph::Sym::T);
  auto x = b.input("x", graph::Shape{T, graph::Dim::constant(32)}, DType::F32);
  auto x2 = b.input("x2", graph::Shape{T, graph::Dim::constant(32)}, DType::F32);
  auto w = b.parameter("w", graph::make_shape({32, 32}), DType::F32);
  auto bias = b.input("bias", graph::make_shape({1, 32}), DType::F32);
  auto shared = b.matmul(x, w);
  b.output("a", b.add(x, shared));
  b.output("b", shared);                                     // a second reader: no fusion
  b.output("c", b.add(bias, b.matmul(x2, w)));               // broadcasting residual: no fusion
  b.output("d", b.swiglu(b.matmul(x, w), b.matmul(x2, w)));  // gate and up of different x
  b.output("e", b.add(b.matmul(x2, w), x));                  // fused (product first)
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  CpuBackend cpu({1});
  CompileOptions opt;
  opt.max = testing::bindings(4, 0);
  std::vector<float> wdata(32 * 32, 0.5f);
  auto plan = cpu.compile(
      *g, [&](const graph::Node&) -> Result<const void*> { return wdata.data(); }, opt);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(count_op((*plan)->compiled_graph(), Op::MatMulAdd), 1u);
  EXPECT_EQ(count_op((*plan)->compiled_graph(), Op::MatMulSwiGlu), 0u);
  const auto& fired = (*plan)->rewrites().fired;
  EXPECT_NE(std::find(fired.begin(), fired.end(), "fuse_matmul_residual: 1 add(matmul) -> matmul_add"),
            fired.end());
  for (const std::string& f : fired) EXPECT_EQ(f.rfind("fuse_gate_up", 0), std::string::npos) << f;
}

}  // namespace
}  // namespace glass::backend::cpu
