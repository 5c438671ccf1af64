// Kernel-level matmul throughput: kernels::matmul (the cpu backend's matmul op, activation
// conversion and thread split included) on SmolLM2-135M's shapes, for f32 / f16 / bf16 weights at
// the machine's best ISA, and Llama-3.2-1B's decode shapes for the quantized types the 1B files
// use (q4_0, q8_0, q4_k, q6_k) and q5_0 / q5_1 (Q4_K_M's fallback for rows not a multiple of 256),
// in the file layout and in the repacked one (q4_0x16 at the AVX2 tier too); SmolLM2's Q4_0 decode products.
// Decode-sized products rotate through enough weight copies (>= 256 MiB) that every call streams its weights
// from memory, as a token step does; with GLASS_BENCH_HOT set they reuse one copy, which small shapes keep in
// cache: the kernel's compute rate without the memory. Reports GFLOP/s (2MNK per second) and weight GB/s.
// BM_WalkRead reads the same bytes as a repacked layout's decode walk without the arithmetic.
// Not a unit test: run build-test/bin/glass_matmul_bench [--benchmark_filter=...];
// GLASS_BENCH_THREADS sets the threads (default 2).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
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
  if (t == DType::MXFP4) {  // glass has no MXFP4 quantizer: random blocks, exponents 2^-8 .. 2^-6
    std::vector<std::byte> out(*graph::dtype_bytes(t, static_cast<uint64_t>(n * k)));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<std::byte>(i % 17 == 0 ? 120 + rng() % 3 : rng());
    return out;
  }
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

// `copies` copies of n bytes in huge pages where the kernel gives them, each starting on a page,
// as the cpu plan's repacked weights lie (weight_repack.cpp): with THP on madvise a std::vector's
// buffer has 4 KiB pages, and starts 16 bytes past one, which moves every load across lines.
class AlignedCopies {
 public:
  AlignedCopies(size_t n, size_t copies) : stride_((n + 4095) / 4096 * 4096) {
    const size_t bytes = (stride_ * copies + kHugePage - 1) / kHugePage * kHugePage;
    data_ = static_cast<std::byte*>(std::aligned_alloc(kHugePage, bytes));
    if (data_ != nullptr) ::madvise(data_, bytes, MADV_HUGEPAGE);
  }
  ~AlignedCopies() { std::free(data_); }
  AlignedCopies(const AlignedCopies&) = delete;
  AlignedCopies& operator=(const AlignedCopies&) = delete;
  std::byte* copy(size_t c) { return data_ + c * stride_; }
  bool ok() const { return data_ != nullptr; }

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  size_t stride_;
  std::byte* data_ = nullptr;
};

// repacked: the weights in the kernel's repacked layout (weight_repack.h), as the cpu plan reads
// them by default.
void BM_Matmul(benchmark::State& state, DType t, Isa isa, bool repacked) {
  const int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  const kernels::MatmulKernel* mk = repacked ? kernels::repacked_matmul_kernel(isa, t, DecodeStrategy::Spread)
                                             : kernels::matmul_kernel_for(isa, t);
  if (mk == nullptr || isa > detect_isa()) {
    state.SkipWithError("kernel or ISA not available");
    return;
  }
  const size_t wbytes = static_cast<size_t>(N) * *graph::dtype_bytes(t, static_cast<uint64_t>(K));
  const size_t copies = M <= 4 && std::getenv("GLASS_BENCH_HOT") == nullptr
                            ? std::max<size_t>(1, (size_t{256} << 20) / wbytes)
                            : 1;
  std::vector<std::byte> w = random_weights(t, N, K, 1);
  if (w.empty()) {
    state.SkipWithError("no weights of this type could be made");
    return;
  }
  AlignedCopies all(wbytes, copies);
  if (!all.ok()) {
    state.SkipWithError("no memory for the weight copies");
    return;
  }
  if (repacked)
    mk->repack(w.data(), all.copy(0), N, K);
  else
    std::memcpy(all.copy(0), w.data(), wbytes);
  for (size_t c = 1; c < copies; ++c) std::memcpy(all.copy(c), all.copy(0), wbytes);
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
    args.in[1].data = all.copy(c);
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

// Llama-3.2-1B's prefill products at 512 rows: q/o, k/v, gate/up, down (one k of 8192).
void shapes_1b_prefill(benchmark::internal::Benchmark* b) {
  for (auto [N, K] : {std::pair<int64_t, int64_t>{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}})
    b->Args({512, N, K});
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK_CAPTURE(BM_Matmul, f16x16_1b, DType::F16, detect_isa(), true)->Apply(shapes_1b_prefill);

// Llama-3.2-1B decode: q/o 2048x2048, k/v 512x2048, gate/up 8192x2048, down 2048x8192, and a
// 16384-row slice of the 128256x2048 LM head (the same rows, fewer of them); and q/o at 512 rows.
void shapes_1b(benchmark::internal::Benchmark* b) {
  for (auto [N, K] :
       {std::pair<int64_t, int64_t>{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {16384, 2048}})
    b->Args({1, N, K});
  b->Args({512, 2048, 2048});  // and one prefill product (the packed path from each layout)
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// SmolLM2-135M's decode products as its Q4_0 file runs them: q, k and v as one 960-row product,
// o, gate and up as one 3072-row product, down. Their 0.2-1 MB are where a token's fixed costs
// (cold streams, the hand-off) weigh most.
void shapes_small_decode(benchmark::internal::Benchmark* b) {
  for (auto [N, K] : {std::pair<int64_t, int64_t>{960, 576}, {576, 576}, {3072, 576}, {576, 1536}})
    b->Args({1, N, K});
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

// A batched decode step on the 1B's gate/up and q/o shapes: one activation row per sequence of
// the step (the engine at 2, 4 or 8 sequences); the weights are read once per step however many.
void shapes_batched_decode(benchmark::internal::Benchmark* b) {
  for (int64_t M : {1, 2, 3, 4, 6, 8})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{8192, 2048}, {2048, 2048}}) b->Args({M, N, K});
  b->ArgNames({"M", "N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK_CAPTURE(BM_Matmul, q4_0x16_batched, DType::Q4_0, detect_isa(), true)->Apply(shapes_batched_decode);
BENCHMARK_CAPTURE(BM_Matmul, q8_0x16_batched, DType::Q8_0, detect_isa(), true)->Apply(shapes_batched_decode);
BENCHMARK_CAPTURE(BM_Matmul, q4_0, DType::Q4_0, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_0x16_small, DType::Q4_0, detect_isa(), true)->Apply(shapes_small_decode);
BENCHMARK_CAPTURE(BM_Matmul, q4_0x16, DType::Q4_0, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_0x16_avx2, DType::Q4_0, Isa::Avx2, true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q8_0x16, DType::Q8_0, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q5_0, DType::Q5_0, detect_isa(), false)->Apply(shapes_1b);
// gpt-oss's MXFP4 experts in the file's layout (the only one it has), and Q4_0's for comparison, on
// the avx512 tier (avx512bf16 adds only bf16 rows).
BENCHMARK_CAPTURE(BM_Matmul, mxfp4, DType::MXFP4, Isa::Avx512, false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_0_avx512, DType::Q4_0, Isa::Avx512, false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q5_0x16, DType::Q5_0, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q5_1x16, DType::Q5_1, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_k, DType::Q4_K, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q4_kx16, DType::Q4_K, detect_isa(), true)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q6_k, DType::Q6_K, detect_isa(), false)->Apply(shapes_1b);
BENCHMARK_CAPTURE(BM_Matmul, q6_kx16, DType::Q6_K, detect_isa(), true)->Apply(shapes_1b);

// The bytes a repacked decode walk reads, read in the same order with loads only: the same task
// split (split_weight_rows), and per task the same walk of 16-row groups (four groups a quarter of
// the task apart, block by block, where the layout walks in lockstep; else one group at a time).
// Against BM_Matmul of the same layout and shape it tells the kernel's arithmetic apart from the
// walk's memory access; against `glass bench --bandwidth` (four long streams per thread) the walk
// apart from the machine. Compare within one run, e.g. with --benchmark_enable_random_interleaving
// and repetitions: the host's bandwidth drifts by the minute.
#if defined(__x86_64__)
// Every 64-byte piece of each stream's block b, stream after stream, block after block, with the
// kernels' prefetches; each stream's loads are their own instructions (unrolled), as in the
// kernels' lockstep walk.
template <int Streams, size_t BlockBytes>
__attribute__((target("avx512f"))) uint64_t read_blocks(const std::byte* const* g, int64_t nb) {
  __m512i acc[Streams];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (int64_t b = 0; b < nb; ++b)
#pragma GCC unroll 4
    for (int q = 0; q < Streams; ++q) {
      const std::byte* blk = g[q] + static_cast<size_t>(b) * BlockBytes;
      // The kernels' software prefetch (x86_simd.h prefetch_ahead: each block's lines 4 KiB ahead).
#pragma GCC unroll 64
      for (size_t off = 0; off < BlockBytes; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(blk) + 4096 + off, _MM_HINT_T0);
#pragma GCC unroll 64
      for (size_t off = 0; off + 64 <= BlockBytes; off += 64)
        acc[q] = _mm512_xor_si512(acc[q], _mm512_loadu_si512(blk + off));
    }
  uint64_t lanes[8] = {};
  for (auto& v : acc) {
    uint64_t l[8];
    _mm512_storeu_si512(l, v);
    for (int i = 0; i < 8; ++i) lanes[i] ^= l[i];
  }
  return lanes[0] ^ lanes[7];
}

using ReadBlocksFn = uint64_t (*)(const std::byte* const* g, int64_t nb);
template <size_t BlockBytes>
constexpr std::pair<ReadBlocksFn, ReadBlocksFn> kReaders{read_blocks<1, BlockBytes>,
                                                         read_blocks<4, BlockBytes>};

// block_bytes: one block of 16 rows (q4_0 16 x 18, q8_0 16 x 34, q4_k 16 x 144, q6_k 16 x 210).
void BM_WalkRead(benchmark::State& state, DType t, size_t block_bytes, bool lockstep) {
  const std::pair<ReadBlocksFn, ReadBlocksFn> readers = block_bytes == 288    ? kReaders<288>
                                                        : block_bytes == 544  ? kReaders<544>
                                                        : block_bytes == 2304 ? kReaders<2304>
                                                                              : kReaders<3360>;
  const ReadBlocksFn read1 = readers.first, read4 = readers.second;
  const int64_t N = state.range(0), K = state.range(1);
  const kernels::MatmulKernel* mk = kernels::repacked_matmul_kernel(Isa::Avx512, t, DecodeStrategy::Spread);
  if (mk == nullptr || detect_isa() < Isa::Avx512) {
    state.SkipWithError("no repacked AVX-512 kernel");
    return;
  }
  const size_t row_bytes = *graph::dtype_bytes(t, static_cast<uint64_t>(K));
  const size_t wbytes = static_cast<size_t>(N) * row_bytes, group_bytes = 16 * row_bytes;
  const int64_t nb = static_cast<int64_t>(group_bytes / block_bytes);
  const size_t copies = std::max<size_t>(1, (size_t{256} << 20) / wbytes);
  AlignedCopies all(wbytes, copies);
  if (!all.ok()) {
    state.SkipWithError("no memory for the weight copies");
    return;
  }
  for (size_t i = 0; i < copies; ++i) std::memset(all.copy(i), 1, wbytes);
  ThreadPool pool(bench_threads());
  std::vector<uint64_t> sinks(static_cast<size_t>(pool.size()));
  size_t c = 0;
  for (auto _ : state) {
    const std::byte* w = all.copy(c);
    c = (c + 1) % copies;
    kernels::split_weight_rows(pool, N, *mk, [&](int64_t n0, int64_t n1, int thread) {
      const int64_t g0 = n0 / 16, groups = (n1 - n0) / 16;
      auto at = [&](int64_t g) { return w + static_cast<size_t>(g0 + g) * group_bytes; };
      uint64_t sum = 0;
      const int64_t q = lockstep ? groups / 4 : 0;
      for (int64_t j = 0; j < q; ++j) {
        const std::byte* gs[4] = {at(j), at(j + q), at(j + 2 * q), at(j + 3 * q)};
        sum ^= read4(gs, nb);
      }
      for (int64_t g = 4 * q; g < groups; ++g) {
        const std::byte* gs[1] = {at(g)};
        sum ^= read1(gs, nb);
      }
      sinks[static_cast<size_t>(thread)] ^= sum;
    });
    benchmark::DoNotOptimize(sinks.data());
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(wbytes) * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
}

void walk_shapes(benchmark::internal::Benchmark* b) {
  for (auto [N, K] :
       {std::pair<int64_t, int64_t>{2048, 2048}, {512, 2048}, {8192, 2048}, {2048, 8192}, {16384, 2048}})
    b->Args({N, K});
  b->ArgNames({"N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_WalkRead, q4_0x16, DType::Q4_0, 288, true)->Apply(walk_shapes);
void walk_shapes_small(benchmark::internal::Benchmark* b) {
  for (auto [N, K] : {std::pair<int64_t, int64_t>{960, 576}, {576, 576}, {3072, 576}, {576, 1536}})
    b->Args({N, K});
  b->ArgNames({"N", "K"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_WalkRead, q4_0x16_small, DType::Q4_0, 288, true)->Apply(walk_shapes_small);
BENCHMARK_CAPTURE(BM_WalkRead, q8_0x16, DType::Q8_0, 544, true)->Apply(walk_shapes);
BENCHMARK_CAPTURE(BM_WalkRead, q4_kx16, DType::Q4_K, 2304, false)->Apply(walk_shapes);
BENCHMARK_CAPTURE(BM_WalkRead, q6_kx16, DType::Q6_K, 3360, false)->Apply(walk_shapes);
#endif

}  // namespace

BENCHMARK_MAIN();
