// Sampling allocates nothing per token: from the first sample on, a chain with every sampler on runs
// (sample, accept) with the global allocation counter flat (tests/support/counting_new.h replaces
// global operator new in this test binary).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>

#include "runtime/sampler.h"
#include "support/counting_new.h"

namespace glass::runtime {
namespace {

TEST(SamplerChain, SamplingAllocatesNothingPerToken) {
  const size_t vocab = 1000;
  std::vector<float> logits(vocab);
  for (size_t i = 0; i < vocab; ++i) logits[i] = std::sin(static_cast<float>(i) * 0.37f) * 4.0f;
  SamplingConfig c;
  c.top_k = 0;  // so typical-p and top-p see the whole vocabulary
  c.typical_p = 0.95f;
  c.repeat_penalty = 1.1f;
  c.presence_penalty = 0.1f;
  c.frequency_penalty = 0.1f;
  c.penalty_last_n = 16;
  c.logit_bias = {{3, 2.0f}, {7, -INFINITY}};
  const uint64_t probe = test::allocations();
  // A direct call of operator new (a new-expression may be elided at -O2) proves the counter works.
  ::operator delete(::operator new(16));
  ASSERT_GT(test::allocations(), probe);
  for (const float t : {0.8f, 0.0f}) {
    c.temperature = t;
    auto chain = SamplerChain::from_config(c, vocab);
    ASSERT_TRUE(chain.ok());
    const uint64_t before = test::allocations();
    for (int i = 0; i < 100; ++i) chain->accept(chain->sample(logits));
    EXPECT_EQ(test::allocations(), before) << "temperature " << t;
  }
}

}  // namespace
}  // namespace glass::runtime
