// The fusion rewrites (graph/fuse.h) and the fused matmul ops they make: which nodes fuse, what the
// log says, that fused graphs print, serialize and decompose to primitives like any other, and that
// inference rejects ill-typed fused nodes naming the op.
#include "graph/fuse.h"

#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/printer.h"
#include "graph/serialize.h"

namespace glass::graph {
namespace {

// One llama-like block: residual adds of two projections, a SwiGLU and a GeGLU gated MLP.
Graph block() {
  Builder b;
  const Dim T = Dim::symbol(Sym::T);
  auto x = b.input("x", Shape{T, Dim::constant(64)}, DType::F32);
  auto wo = b.parameter("wo", make_shape({64, 64}), DType::Q8_0);
  auto wg = b.parameter("wg", make_shape({96, 64}), DType::Q4_0);
  auto wu = b.parameter("wu", make_shape({96, 64}), DType::Q4_0);
  auto wd = b.parameter("wd", make_shape({64, 96}), DType::F16);
  auto h = b.add(x, b.matmul(b.rms_norm(x, b.parameter("n", make_shape({64}), DType::F32), 1e-5f), wo));
  auto act = b.swiglu(b.matmul(h, wg), b.matmul(h, wu)).named("ffn_act");
  auto out = b.add(b.matmul(act, wd), h).named("out");  // product first
  auto act2 = b.geglu(b.matmul(out, wg), b.matmul(out, wu));
  b.output("y", out);
  b.output("z", act2);
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return *g;
}

size_t count(const Graph& g, Op op) {
  size_t n = 0;
  for (const Node& nd : g.nodes) n += nd.op == op ? 1 : 0;
  return n;
}

TEST(Fuse, RewritesNameWhatTheyFused) {
  RewriteLog log;
  auto r = fuse_matmul_residual(block(), nullptr, log);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto g = fuse_gate_up(*r, nullptr, log);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(count(*g, Op::MatMulAdd), 2u);
  EXPECT_EQ(count(*g, Op::MatMulSwiGlu), 1u);
  EXPECT_EQ(count(*g, Op::MatMulGeGlu), 1u);
  EXPECT_EQ(count(*g, Op::MatMul), 0u);
  EXPECT_EQ(count(*g, Op::Add), 0u);
  ASSERT_EQ(log.fired.size(), 3u);
  EXPECT_EQ(log.fired[0], "fuse_matmul_residual: 2 add(matmul) -> matmul_add");
  EXPECT_EQ(log.fired[1], "fuse_gate_up: 1 swiglu(matmul, matmul) -> matmul_swiglu");
  EXPECT_EQ(log.fired[2], "fuse_gate_up: 1 geglu(matmul, matmul) -> matmul_geglu");
  // The fused node keeps the consumer's name; outputs follow it.
  const Node& out = g->node(g->outputs[0].node);
  EXPECT_EQ(out.op, Op::MatMulAdd);
  EXPECT_EQ(out.name, "out");
  EXPECT_EQ(g->node(out.inputs[1]).name, "wd");

  const std::string text = to_text(*g);
  EXPECT_NE(text.find("matmul_swiglu("), std::string::npos) << text;
  const std::string json = to_json(*g);
  auto back = from_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(to_json(*back), json);

  RewriteLog lower_log;
  auto lowered = decompose_composites(
      *g, [](const Node&) { return true; }, lower_log);
  ASSERT_TRUE(lowered.ok()) << lowered.error().message;
  for (const Node& n : lowered->nodes) EXPECT_FALSE(is_composite(n.op)) << op_name(n.op);
  EXPECT_EQ(count(*lowered, Op::MatMul), 6u);
}

TEST(Fuse, FilterAndNothingToFuse) {
  RewriteLog log;
  auto none = fuse_gate_up(
      block(), [](Op, const std::vector<DType>&) { return false; }, log);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(count(*none, Op::SwiGlu), 1u);
  EXPECT_TRUE(log.fired.empty());
  // Only q8_0 weights accepted: the q8_0 residual product fuses, the f16 one does not.
  auto some = fuse_matmul_residual(
      block(), [](Op, const std::vector<DType>& d) { return d[1] == DType::Q8_0; }, log);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(count(*some, Op::MatMulAdd), 1u);
}

TEST(Fuse, InferenceRejectsIllTypedFusedNodes) {
  Builder b;
  auto x = b.input("x", make_shape({3, 32}), DType::F32);
  auto w = b.parameter("w", make_shape({8, 32}), DType::Q4_0);
  auto w2 = b.parameter("w2", make_shape({8, 32}), DType::Q8_0);
  auto r = b.input("r", make_shape({1, 8}), DType::F32);
  b.add_node(Op::MatMulAdd, {x.id, w.id, r.id}, NoAttrs{});
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("(matmul_add): residual must be f32[3, 8]"), std::string::npos)
      << g.error().message;

  Builder c;
  auto cx = c.input("x", make_shape({3, 32}), DType::F32);
  auto cw = c.parameter("w", make_shape({8, 32}), DType::Q4_0);
  auto cw2 = c.parameter("w2", make_shape({8, 32}), DType::Q8_0);
  c.add_node(Op::MatMulSwiGlu, {cx.id, cw.id, cw2.id}, NoAttrs{});
  auto g2 = c.finish();
  ASSERT_FALSE(g2.ok());
  EXPECT_NE(g2.error().message.find("(matmul_swiglu): gate and up weights differ"), std::string::npos)
      << g2.error().message;
  (void)w2;
}

}  // namespace
}  // namespace glass::graph
