#include "runtime/sampler.h"

#include <gtest/gtest.h>

namespace glass::runtime {
namespace {

Candidates of(std::vector<float> logits) {
  Candidates c;
  for (size_t i = 0; i < logits.size(); ++i) c.items.push_back({static_cast<int32_t>(i), logits[i], 0.0f});
  return c;
}

TEST(Sampler, GreedyPicksHighestLowestIdOnTies) {
  auto c = of({0.5f, 2.0f, -1.0f, 2.0f});
  make_greedy()->apply(c);
  EXPECT_EQ(c.selected, 1);
}

TEST(Sampler, TopKKeepsTheKBest) {
  auto c = of({0.1f, 3.0f, 2.0f, -5.0f, 2.5f});
  make_top_k(2)->apply(c);
  ASSERT_EQ(c.items.size(), 2u);
  EXPECT_EQ(c.items[0].id, 1);
  EXPECT_EQ(c.items[1].id, 4);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // probabilities ~ 0.665, 0.245, 0.090
  auto c = of({2.0f, 1.0f, 0.0f});
  make_top_p(0.8f)->apply(c);
  EXPECT_EQ(c.items.size(), 2u);
  auto d = of({2.0f, 1.0f, 0.0f});
  make_top_p(0.6f)->apply(d);
  EXPECT_EQ(d.items.size(), 1u);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  auto c = of({0.0f, -0.5f, -3.0f});  // p relative to best: 1, 0.61, 0.05
  make_min_p(0.1f)->apply(c);
  EXPECT_EQ(c.items.size(), 2u);
}

TEST(Sampler, DistIsSeededAndFollowsTheDistribution) {
  auto chain = SamplerChain::from_config(
      SamplingConfig{.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = 3}, 3);
  const std::vector<float> logits{0.0f, std::log(3.0f), -100.0f};  // 0.25, 0.75, ~0
  std::vector<int> counts(3, 0);
  std::vector<int32_t> first;
  for (int i = 0; i < 4000; ++i) {
    const int32_t id = chain.sample(logits);
    counts[static_cast<size_t>(id)]++;
    if (i < 20) first.push_back(id);
  }
  EXPECT_NEAR(counts[1] / 4000.0, 0.75, 0.03);
  EXPECT_EQ(counts[2], 0);
  chain.reset();
  for (int i = 0; i < 20; ++i) EXPECT_EQ(chain.sample(logits), first[static_cast<size_t>(i)]);
}

}  // namespace
}  // namespace glass::runtime
