// Sampling allocates nothing per token: from the first sample on, a chain with every sampler on runs
// (sample, accept) with the global allocation counter flat. The counter replaces global operator
// new for this test binary (as backend/cpu/llama_cpu_test.cpp does for its own).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>

#include "runtime/sampler.h"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// GCC pairs the inlined malloc/free across these replacements and warns; they do match.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
// The nothrow forms too (std::stable_sort's buffer uses them), or they would pair the
// sanitizer's new with this free.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

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
  const uint64_t probe = g_allocations.load();
  // A direct call of operator new (a new-expression may be elided at -O2) proves the counter works.
  ::operator delete(::operator new(16));
  ASSERT_GT(g_allocations.load(), probe);
  for (const float t : {0.8f, 0.0f}) {
    c.temperature = t;
    auto chain = SamplerChain::from_config(c, vocab);
    ASSERT_TRUE(chain.ok());
    const uint64_t before = g_allocations.load();
    for (int i = 0; i < 100; ++i) chain->accept(chain->sample(logits));
    EXPECT_EQ(g_allocations.load(), before) << "temperature " << t;
  }
}

}  // namespace
}  // namespace glass::runtime
