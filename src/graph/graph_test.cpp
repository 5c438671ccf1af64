// Builder validation, symbolic shapes, printers and versioned JSON serialization.
#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/printer.h"
#include "graph/rewrite.h"
#include "graph/serialize.h"

namespace glass::graph {
namespace {

// A small attention block with every op kind the llama graph uses.
Result<Graph> sample_graph() {
  Builder b;
  const Dim T = Dim::symbol(Sym::T);
  auto x = b.input("x", Shape{T, Dim::constant(8)}, DType::F32);
  auto pos = b.input("pos", Shape{T}, DType::I32);
  auto w = b.parameter("blk.0.attn_q.weight", make_shape({8, 8}), DType::F16);
  auto norm = b.parameter("blk.0.attn_norm.weight", make_shape({8}), DType::F32);
  auto cache = b.state("blk.0.cache_k", make_shape({16, 2, 4}), DType::F32);
  auto table = b.input("block_tables", make_shape({2, 4}), DType::I32);
  auto q = b.reshape(b.matmul(b.rms_norm(x, norm, 1e-6f), w), Shape{T, Dim::constant(2), Dim::constant(4)});
  q = b.rope(q, pos, RopeAttrs{4, RopeMode::NeoX, 10000.0f, 0.25f}).named("blk.0.q_rope");
  auto k_all = b.kv_write(cache, q, pos);
  b.update_state(cache, k_all);
  auto o =
      b.attention(q, k_all, k_all, pos, pos, table, AttentionAttrs{0.5f, Dim::symbol(Sym::S), 0, 0.0f, 4});
  b.output("out", b.swiglu(o, o));
  return b.finish();
}

TEST(Builder, InfersSymbolicShapes) {
  auto g = sample_graph();
  ASSERT_TRUE(g.ok()) << g.error().message;
  const Node& out = g->node(g->outputs[0].node);
  EXPECT_EQ(shape_to_string(out.shape), "[T, 2, 4]");
  EXPECT_EQ(out.dtype, DType::F32);
  EXPECT_EQ(g->state_updates.size(), 1u);
}

TEST(Builder, ErrorsNameTheNodeAndOp) {
  Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(8)}, DType::F32);
  auto w = b.parameter("blk.2.ffn_up.weight", make_shape({16, 7}), DType::F32);
  b.matmul(x, w).named("never");
  auto g = b.finish();
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("matmul"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("[T, 8] x [16, 7]"), std::string::npos) << g.error().message;
}

TEST(Builder, RejectsBadCompositeOperands) {
  {
    Builder b;
    auto x = b.input("x", make_shape({3, 8}), DType::F32);
    auto w = b.parameter("norm", make_shape({7}), DType::F32);
    b.rms_norm(x, w, 1e-5f);
    auto g = b.finish();
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("rms_norm"), std::string::npos);
  }
  {
    Builder b;
    auto q = b.input("q", make_shape({3, 6, 4}), DType::F32);
    auto k = b.state("k", make_shape({8, 4, 4}), DType::F32);
    auto p = b.input("p", make_shape({3}), DType::I32);
    auto table = b.input("block_tables", make_shape({1, 8}), DType::I32);
    b.attention(q, k, k, p, p, table, AttentionAttrs{1.0f, Dim::constant(8)});
    auto g = b.finish();
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("6 query heads not a multiple of 4 kv heads"), std::string::npos)
        << g.error().message;
  }
  {
    Builder b;
    auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(8)}, DType::F32);
    b.reshape(x, make_shape({4, 2}));  // T is unknown: cannot become constants
    EXPECT_FALSE(b.finish().ok());
  }
}

TEST(Serialize, RoundTripsExactly) {
  auto g = sample_graph();
  ASSERT_TRUE(g.ok());
  const std::string json = to_json(*g);
  auto back = from_json(json);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(to_json(*back), json);
  EXPECT_EQ(back->hash(), g->hash());
}

TEST(Serialize, RejectsUnknownVersionAndBadContent) {
  auto g = sample_graph();
  ASSERT_TRUE(g.ok());
  std::string json = to_json(*g);
  const std::string v = "\"version\":2";
  const auto at = json.find(v);
  ASSERT_NE(at, std::string::npos);
  std::string future = json;
  future.replace(at, v.size(), "\"version\":99");
  auto r = from_json(future);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unsupported graph format version 99"), std::string::npos)
      << r.error().message;

  EXPECT_FALSE(from_json("{not json").ok());
  EXPECT_FALSE(from_json(R"({"format":"other","version":1})").ok());
  std::string bad_op = json;
  bad_op.replace(bad_op.find("\"rms_norm\""), 10, "\"rms_nrom\"");
  r = from_json(bad_op);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown op 'rms_nrom'"), std::string::npos);
}

TEST(Printer, TextAndDotShowOpsAttributesAndShapes) {
  auto g = sample_graph();
  ASSERT_TRUE(g.ok());
  const std::string text = to_text(*g);
  EXPECT_NE(text.find("rope(%"), std::string::npos) << text;
  EXPECT_NE(text.find("{n_rot=4, mode=neox, freq_base=10000, freq_scale=0.25}"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[T, 2, 4]  # blk.0.q_rope"), std::string::npos) << text;
  EXPECT_NE(text.find("state \"blk.0.cache_k\" : f32[16, 2, 4]"), std::string::npos) << text;
  EXPECT_NE(text.find("{scale=0.5, kv_len=S, block_size=4}"), std::string::npos) << text;
  const std::string dot = to_dot(*g);
  EXPECT_EQ(dot.rfind("digraph glass {", 0), 0u);
  EXPECT_NE(dot.find("label=\"update\""), std::string::npos);
}

TEST(Rewrite, DecomposeLeavesOnlyPrimitivesAndLogsEachComposite) {
  auto g = sample_graph();
  ASSERT_TRUE(g.ok());
  RewriteLog log;
  auto lowered = decompose_composites(
      *g, [](const Node&) { return true; }, log);
  ASSERT_TRUE(lowered.ok()) << lowered.error().message;
  for (const Node& n : lowered->nodes) EXPECT_FALSE(is_composite(n.op)) << op_name(n.op);
  EXPECT_EQ(log.fired.size(), 5u);  // rms_norm, rope, kv_write, attention, swiglu
  EXPECT_EQ(shape_to_string(lowered->node(lowered->outputs[0].node).shape), "[T, 2, 4]");
}

TEST(Rewrite, DeadNodesAreRemoved) {
  Builder b;
  auto x = b.input("x", make_shape({2}), DType::F32);
  b.exp(x);  // unused
  b.output("y", b.neg(x));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  RewriteLog log;
  auto live = eliminate_dead_nodes(*g, log);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->nodes.size(), 2u);
  ASSERT_EQ(log.fired.size(), 1u);
  EXPECT_EQ(log.fired[0], "eliminate_dead_nodes: removed 1 nodes");
}

}  // namespace
}  // namespace glass::graph
