// The default context (LoadOptions::n_ctx = 0) as llama.cpp's -c 0 with --fit: the training context,
// as far as half the memory the weights leave holds its cache, at most 131072; an explicit n_ctx or a
// kv_size pool keeps the build's default; and a small file that claims a training context of 2^31
// runs within 64 MiB of heap (sized by memory alone, it took 15.6 GB).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "glass/llm.h"
#include "glass/tools.h"
#include "support/counting_new.h"
#include "support/tiny_llama.h"

namespace glass {
namespace {

// The context a load chose; with `run`, after a session of it generated two tokens.
int64_t loaded_context(uint32_t context_length, LoadOptions options, const std::string& name,
                       bool run = false) {
  test::TinyLlamaSpec spec;
  spec.context_length = context_length;
  options.backend = "ref";
  auto model = load_llm(test::write_tiny_llama(spec, name).string(), options);
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (!model.ok()) return -1;
  if (run) {
    auto session = (*model)->new_session();
    EXPECT_TRUE(session.ok()) << session.error().message;
    if (!session.ok()) return -1;
    GenerateConfig config;
    config.max_tokens = 2;
    config.stop_at_end_of_generation = false;
    auto r = generate(**session, std::vector<int32_t>{1, 4, 5}, config);
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  return (*model)->info().n_ctx;
}

TEST(DefaultContext, IsTheTrainingContextWhereMemoryHoldsIt) {
  ASSERT_GT(memory_limit(), 0u);
  // One layer, one KV head of 4: 32 bytes of f32 cache per position.
  EXPECT_EQ(loaded_context(32, {}, "ctx32.gguf"), 32);
  EXPECT_EQ(loaded_context(100000, {}, "ctx100k.gguf"), 100000);
  EXPECT_EQ(loaded_context(100000, LoadOptions{.n_ctx = 640}, "ctx640.gguf"), 640);
  LoadOptions pool;
  pool.kv_size = 256;
  EXPECT_EQ(loaded_context(100000, pool, "ctxpool.gguf"), 4096);
  LoadOptions least;
  least.min_ctx = 50000;
  EXPECT_EQ(loaded_context(100000, least, "ctxmin.gguf"), 100000);
  // min_ctx never takes the default past max(training context, 4096) (a longer prompt is refused).
  LoadOptions past;
  past.kv_size = 256;
  past.min_ctx = 200000;
  EXPECT_EQ(loaded_context(100000, past, "ctxpast.gguf"), 100000);
  past.min_ctx = 6000;
  EXPECT_EQ(loaded_context(100000, past, "ctxsix.gguf"), 6000);
}

TEST(DefaultContext, AHugeTrainingContextIsCappedAndRunsInLittleMemory) {
  const uint64_t memory = memory_limit();
  test::reset_peak_bytes();
  const uint64_t before = test::live_bytes();
  const int64_t n = loaded_context(0x7fffffffu, {}, "ctxhuge.gguf", /*run=*/true);
  EXPECT_LE(test::peak_bytes() - before, uint64_t{64} << 20) << "a " << n << "-position context";
  EXPECT_EQ(n, std::min<int64_t>(131072, static_cast<int64_t>(memory / 2 / 32)));
}

// The pool's row size the default context is sized by, as ModelInfo states it (glass serve sizes
// its pool by it too): one layer, one KV head of 4, K and V, 4 bytes each (f32) or 2 (f16).
TEST(DefaultContext, TheInfoStatesThePoolsBytesPerRow) {
  for (const auto& [cache, bytes] :
       {std::pair<CacheType, uint64_t>{CacheType::F32, 32}, {CacheType::F16, 16}}) {
    LoadOptions o{.backend = "ref"};
    o.cache_type = cache;
    o.kv_size = 64;
    auto model = load_llm(test::write_tiny_llama({}, fmt::format("row-{}.gguf", bytes)).string(), o);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->info().kv_bytes_per_row, bytes) << bytes;
    EXPECT_EQ((*model)->info().kv_size, 64);
  }
}

}  // namespace
}  // namespace glass
