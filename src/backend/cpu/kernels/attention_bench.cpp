// Decode attention throughput: one query row against S cached rows, as a decode step runs it, with
// the cache cold in memory (copies of it rotated, as the layers of a model are between two visits).
// Reported as the cache bytes read per second (K and V). Not a unit test: run
// build/bin/glass_attention_bench [--benchmark_filter=...]; GLASS_BENCH_THREADS sets the threads,
// GLASS_BENCH_HUGE puts the copies on huge pages (as the session's states are), GLASS_BENCH_HOT
// reads one copy again and again (the kernel without the memory).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "formats/half.h"
#include "graph/builder.h"

namespace {

using namespace glass;
using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;

int bench_threads() {
  const char* env = std::getenv("GLASS_BENCH_THREADS");
  return env != nullptr ? std::atoi(env) : 2;
}

// H query heads over Hkv cached heads of D, S positions visible, in an f32 or f16 cache read
// through a block table of 16-row blocks in order (a session's one sequence).
void BM_DecodeAttention(benchmark::State& state, DType cache) {
  const int64_t H = state.range(0), Hkv = state.range(1), D = state.range(2), S = state.range(3);
  constexpr int64_t kBlock = 16;
  const int64_t C = (S + kBlock - 1) / kBlock * kBlock, MB = C / kBlock;
  graph::Builder b;
  auto q = b.input("q", Shape{Dim::symbol(Sym::T), Dim::constant(H), Dim::constant(D)}, DType::F32);
  auto pos = b.input("pos", Shape{Dim::symbol(Sym::T)}, DType::I32);
  auto kc = b.state("kc", graph::make_shape({C, Hkv, D}), cache);
  auto vc = b.state("vc", graph::make_shape({C, Hkv, D}), cache);
  auto seq = b.input("seq", Shape{Dim::symbol(Sym::T)}, DType::I32);
  auto table = b.input("table", graph::make_shape({1, MB}), DType::I32);
  const graph::AttentionAttrs attrs{1.0f / std::sqrt(static_cast<float>(D)), Dim::symbol(Sym::S), 0, 0.0f,
                                    kBlock};
  b.output("o", b.attention(q, kc, vc, pos, seq, table, attrs));
  auto g = b.finish();
  backend::cpu::CpuBackend be({bench_threads(), {}});
  backend::CompileOptions opt;
  opt.max[Sym::T] = 1;
  opt.max[Sym::S] = S;
  auto plan = be.compile(
      *g, [](const graph::Node&) -> Result<const void*> { return nullptr; }, opt);
  if (!plan) {
    state.SkipWithError(plan.error().message.c_str());
    return;
  }
  const size_t elt = cache == DType::F16 ? 2 : 4, cache_bytes = static_cast<size_t>(C * Hkv * D) * elt;
  const size_t copies = std::getenv("GLASS_BENCH_HOT") != nullptr
                            ? 1
                            : std::max<size_t>(2, (size_t{256} << 20) / (2 * cache_bytes));
  // One 2 MiB-aligned arena for all copies, on transparent huge pages as the session's cache.
  const size_t arena_bytes =
      (2 * copies * cache_bytes + (size_t{2} << 20) - 1) / (size_t{2} << 20) * (size_t{2} << 20);
  std::unique_ptr<std::byte, decltype(&std::free)> arena(
      static_cast<std::byte*>(std::aligned_alloc(size_t{2} << 20, arena_bytes)), &std::free);
  if (std::getenv("GLASS_BENCH_HUGE") != nullptr) ::madvise(arena.get(), arena_bytes, MADV_HUGEPAGE);
  struct Buf {
    std::byte* p;
    std::byte* data() const { return p; }
  };
  std::vector<Buf> k, v;
  for (size_t i = 0; i < copies; ++i) {
    k.push_back({arena.get() + (2 * i) * cache_bytes});
    v.push_back({arena.get() + (2 * i + 1) * cache_bytes});
  }
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto* set : {&k, &v})
    for (const Buf& buf : *set)
      for (size_t i = 0; i < cache_bytes / elt; ++i) {
        const float x = normal(rng);
        if (cache == DType::F16) {
          const uint16_t h = formats::f32_to_f16(x);
          std::memcpy(buf.data() + 2 * i, &h, 2);
        } else {
          std::memcpy(buf.data() + 4 * i, &x, 4);
        }
      }
  std::vector<int32_t> blocks(static_cast<size_t>(MB));
  for (int64_t i = 0; i < MB; ++i) blocks[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  int32_t seq0 = 0;
  std::vector<float> qv(static_cast<size_t>(H * D)), out(qv.size());
  for (float& x : qv) x = normal(rng);
  int32_t qpos = static_cast<int32_t>(S - 1);
  backend::StepArgs args;
  args.bind[Sym::T] = 1;
  args.bind[Sym::S] = S;
  args.inputs = {qv.data(), &qpos, &seq0, blocks.data()};
  args.outputs = {out.data()};
  auto ws = (*plan)->make_workspace();
  backend::StepStats stats;
  size_t c = 0;
  for (auto _ : state) {
    args.states = {k[c].data(), v[c].data()};
    if (auto st = (*plan)->run(args, *ws, stats); !st) {
      state.SkipWithError(st.error().message.c_str());
      return;
    }
    c = (c + 1) % copies;
  }
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(2 * S * Hkv * D) * static_cast<double>(elt),
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"H", "Hkv", "D", "S"});
  for (int64_t s : {64, 256, 1024, 4096}) b->Args({9, 3, 64, s});  // SmolLM2-135M
  for (int64_t s : {1024, 4096}) b->Args({3, 1, 64, s});
  for (int64_t s : {64, 256, 1024, 4096}) b->Args({32, 8, 64, s});  // Llama-3.2-1B
  b->UseRealTime();
}

BENCHMARK_CAPTURE(BM_DecodeAttention, f32, DType::F32)->Apply(shapes);
BENCHMARK_CAPTURE(BM_DecodeAttention, f16, DType::F16)->Apply(shapes);

}  // namespace

BENCHMARK_MAIN();
