// Kernel-level matmul throughput: kernels::matmul (the cpu backend's matmul op, activation
// conversion and thread split included) on SmolLM2-135M's shapes, for f32 / f16 / bf16 weights at
// the machine's best ISA, and Llama-3.2-1B's decode shapes for the quantized types the 1B files
// use (q4_0, q8_0, q4_k, q6_k), in the file layout and in the repacked one. Decode-sized products rotate
// through enough weight copies (>= 256 MiB) that every call streams its weights from memory, as a token step
// does; with GLASS_BENCH_HOT set they reuse one copy, which small shapes keep in cache: the
// kernel's compute rate without the memory. Reports GFLOP/s (2MNK per second) and weight GB/s.
// Not a unit test: run build-test/bin/glass_matmul_bench [--benchmark_filter=...];
// GLASS_BENCH_THREADS sets the threads (default 2).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "backend/cpu/kernel.h"
#include "backend/cpu/kernels/matmul.h"
#include "formats/half.h"
#include "formats/quantize.h"
#include "graph/dtype.h"

namespace {

using namespace glass;
using namespace glass::backend::cpu;
using graph::DType;

int bench_threads() {
  const char* env = std::getenv("GLASS_BENCH_THREADS");
  return env != nullptr ? std::atoi(env) : 2;
}

std::vector<std::byte> random_weights(DType t, int64_t n, int64_t k, uint64_t seed) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> dist(0.0f, 0.05f);
  if (graph::traits(t).quantized) {
    std::vector<float> row(static_cast<size_t>(k));
    const size_t row_bytes = *graph::dtype_bytes(t, static_cast<uint64_t>(k));
    std::vector<std::byte> out(static_cast<size_t>(n) * row_bytes);
    for (int64_t r = 0; r < n; ++r) {
      for (float& v : row) v = dist(rng);
      if (!formats::quantize_row(t, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, k).ok())
        return {};
    }
    return out;
  }
  n *= k;
  const size_t esz = t == DType::F32 ? 4 : 2;
  std::vector<std::byte> out(static_cast<size_t>(n) * esz);
  for (int64_t i = 0; i < n; ++i) {
    const float f = dist(rng);
    if (t == DType::F32) {
      std::memcpy(out.data() + i * 4, &f, 4);
    } else {
      const uint16_t h = t == DType::F16 ? formats::f32_to_f16(f) : formats::f32_to_bf16(f);
      std::memcpy(out.data() + i * 2, &h, 2);
    }
  }
  return out;
}

// repacked: the weights in the kernel's repacked layout (weight_repack.h), as the cpu plan reads
// them by default.
void BM_Matmul(benchmark::State& state, DType t, Isa isa, bool repacked) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const kernels::MatmulKernel* mk = kernels::matmul_kernel_for(isa, t);
  if (repacked && mk != nullptr) mk = mk->repacked;
  if (mk == nullptr || isa > detect_isa()) {
    state.SkipWithError("kernel or ISA not available");
    return;
  }
  const size_t wbytes = static_cast<size_t>(N) * *graph::dtype_bytes(t, static_cast<uint64_t>(K));
  const size_t copies = M <= 4 && std::getenv("GLASS_BENCH_HOT") == nullptr
                            ? std::max<size_t>(1, (size_t{256} << 20) / wbytes)
                            : 1;
  std::vector<std::byte> w = random_weights(t, N, K, 1);
  if (repacked) {
    std::vector<std::byte> packed(wbytes);
    mk->repack(w.data(), packed.data(), N, K);
    w = std::move(packed);
  }
  std::vector<std::byte> all(wbytes * copies);
  for (size_t c = 0; c < copies; ++c) std::memcpy(all.data() + c * wbytes, w.data(), wbytes);
  std::vector<float> x(static_cast<size_t>(M * K));
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  std::vector<float> out(static_cast<size_t>(M * N));

  ThreadPool pool(bench_threads());
  const graph::Node node;
  const graph::Bindings bind;
  std::vector<std::byte> converted(
      mk->quantize != nullptr ? static_cast<size_t>(M) * kernels::act_row_bytes(mk->act, K) : 0);
  const size_t per_thread = mk->packed_bytes != nullptr ? (mk->packed_bytes(K) + 63) / 64 * 64 : 0;
  std::vector<std::byte> scratch(per_thread * static_cast<size_t>(pool.size()) + 64);
  auto* scratch_aligned =
      reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});

  KernelArgs args{node, {}, {}, bind, pool};
  args.out.data = out.data();
  args.out.ext.rank = 2;
  args.out.ext.dims[0] = M;
  args.out.ext.dims[1] = N;
  args.in[0].data = x.data();
  args.in[0].ext.rank = 2;
  args.in[0].ext.dims[0] = M;
  args.in[0].ext.dims[1] = K;
  args.in[1].dtype = t;
  args.in[1].ext.rank = 2;
  args.in[1].ext.dims[0] = N;
  args.in[1].ext.dims[1] = K;
  args.scratch = scratch_aligned;
  args.data = mk;
  args.converted = converted.data();
  size_t c = 0;
  for (auto _ : state) {
    args.in[1].data = all.data() + c * wbytes;
    c = (c + 1) % copies;
    const Status st = kernels::matmul(args);
    if (!st.ok()) state.SkipWithError(st.error().message.c_str());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(M * N * K) * iters * 1e-9, benchmark::Counter::kIsRate);
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(wbytes) * iters * 1e-9, benchmark::Counter::kIsRate);
}

// SmolLM2-135M: hidden 576, ffn 1536, q/o 576x576, k/v 192x576, vocabulary 49152 (the LM head).
void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t M : {1, 512})
    for (auto [N, K] :
         {std::pair<int64_t, int64_t>{576, 576}, {192, 576}, {1536, 576}, {576, 1536}, {49152, 576}})
      b->Args({M, N, K});
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_Matmul, f16, DType::F16, detect_isa(), false)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, f16x16, DType::F16, detect_isa(), true)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, bf16, DType::BF16, detect_isa(), false)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, f32, DType::F32, detect_isa(), false)->Apply(shapes);
BENCHMARK_CAPTURE(BM_Matmul, f16_avx2, DType::F16, Isa::Avx2, false)->Apply(shapes);

// Llama-3.2-1B decode: q/o 2048x2048, k/v 512x2048, gate/up 8192x2048, down 2048x8192, and a
// 16384-row slice of the 128256x2048 LM head (the same rows, fewer of them); and q/o at 512 rows.
void shapes_1b(benchmark::internal::Benchmark* b) {
  for (auto [N, K] :
       {std::pair<int64_t, int64_t>{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {16384, 2048}})
    b->Args({1, N, K});
  b->Args({512, 2048, 2048});  // and one prefill product (the packed path from each layout)
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_Matmul, q4_0, DType::Q4_0, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_0x16, DType::Q4_0, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q8_0x16, DType::Q8_0, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_k, DType::Q4_K, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_kx16, DType::Q4_K, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q6_k, DType::Q6_K, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q6_kx16, DType::Q6_K, detect_isa(), true)->Apply(shapes_1b);

}  // namespace

BENCHMARK_MAIN();
