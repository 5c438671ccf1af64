// Capability checks at compile time, the plan cache's compile counter, and bucket limits at run time.
#include "backend/backend.h"

#include <gtest/gtest.h>

#include "backend/plan_cache.h"
#include "graph/builder.h"
#include "support/graph_runner.h"

namespace glass::backend {
namespace {

using graph::Builder;
using graph::Dim;
using graph::DType;
using graph::Sym;

TEST(Backend, MissingKernelFailsAtCompileNamingOpAndDtypes) {
  Builder b;
  auto w = b.parameter("blk.0.ffn_up.weight", graph::make_shape({4, 32}), DType::Q4_0);
  b.output("rows", b.cast(b.slice(w, 0, 0, Dim::constant(2)), DType::F32));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  auto be = make_backend("ref");
  ASSERT_TRUE(be.ok());
  std::vector<uint8_t> blocks(4 * 18, 0);
  auto plan =
      (*be)->compile(*g, [&](const graph::Node&) -> Result<const void*> { return blocks.data(); }, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, ErrorCode::Unsupported);
  EXPECT_NE(plan.error().message.find("ref: no kernel for slice(q4_0)"), std::string::npos)
      << plan.error().message;
}

TEST(Backend, UnknownBackendIsAnError) {
  auto be = make_backend("cuda");
  ASSERT_FALSE(be.ok());
  EXPECT_NE(be.error().message.find("backend 'cuda' is not available"), std::string::npos);
}

TEST(PlanCache, CompilesOncePerKey) {
  Builder b;
  auto x = b.input("x", graph::Shape{Dim::symbol(Sym::T)}, DType::F32);
  b.output("y", b.exp(x));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  auto be = make_backend("ref");
  PlanCache cache;
  CompileOptions small, large;
  small.max[Sym::T] = 1;
  large.max[Sym::T] = 8;
  const WeightResolver none = [](const graph::Node&) -> Result<const void*> { return nullptr; };
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(cache.get(**be, *g, g->hash(), none, small).ok());
    ASSERT_TRUE(cache.get(**be, *g, g->hash(), none, large).ok());
  }
  EXPECT_EQ(cache.compiles(), 2u);
}

TEST(Plan, RejectsBindingsOutsideItsBucket) {
  Builder b;
  auto x = b.input("x", graph::Shape{Dim::symbol(Sym::T)}, DType::F32);
  b.output("y", b.exp(x));
  auto g = b.finish();
  ASSERT_TRUE(g.ok());
  test::GraphRun run;
  run.inputs["x"] = std::vector<float>(4, 0.0f);
  run.bind[Sym::T] = 4;
  graph::Bindings max;
  max[Sym::T] = 2;
  auto st = test::run_graph(*g, run, max, false);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::CapacityExceeded);
  EXPECT_NE(st.error().message.find("T = 4 outside this plan's bucket [0, 2]"), std::string::npos)
      << st.error().message;
}

}  // namespace
}  // namespace glass::backend
