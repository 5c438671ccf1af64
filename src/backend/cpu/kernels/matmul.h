#pragma once
// Matrix products out[m, n] = sum_k x[m, k] * w[n, k] with weights read straight from their packed
// storage (the mapped file) and activations converted once per call to the type the weight's dot
// product wants, as llama.cpp does (ggml's vec_dot_type), so results agree with its references:
//   f32 weights  : f32 activations          q4_0 q5_0 q8_0 : q8_0 blocks (32, one scale)
//   f16 weights  : f16 activations          q4_1 q5_1      : q8_1 blocks (q8_0 + d * sum(q))
//   bf16 weights : bf16 activations         q2_k .. q6_k   : q8_k blocks (256, f32 scale, 16 sums)
// Integer block sums are exact, so a kernel's result depends only on float rounding order.
//
// A MatmulKernel is the per-(weight type, ISA) part: the activation converter and a gemm over a
// tile of weight rows x activation rows. matmul() (ISA-neutral) quantizes, splits tiles over the
// thread pool and calls it.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "backend/cpu/kernel.h"

namespace glass::backend::cpu::kernels {

// BF16_BITS: bf16 values as their 2-byte patterns, an odd row padded with a zero (the avx512bf16
// tier's dot-product kernels read them in pairs).
enum class ActType : uint8_t { F32, F16, BF16, Q8_0, Q8_1, Q8_K, BF16_BITS };

// Activation blocks (internal layouts, not ggml's bytes; same values). d is the f16-rounded scale
// as f32 (q8_0 / q8_1) or the f32 scale (q8_k). F16 / BF16 activations are stored as f32 values
// rounded through the half type, so kernels widen only the weights.
struct ActQ8 {
  int8_t qs[32];
  float d;
  float s;      // q8_1: f16(d_exact * sum(qs)) as f32, the term q4_1/q5_1 minimums multiply
  int32_t sum;  // sum(qs), for kernels that compute with unsigned weights and correct afterwards
  int32_t pad;
};
struct ActQ8K {
  int8_t qs[256];
  int16_t bsums[16];  // sums of each 16 quants
  float d;
  int32_t pad[3];
};
static_assert(sizeof(ActQ8) == 48 && sizeof(ActQ8K) == 304);

size_t act_row_bytes(ActType act, int64_t k);

// Converts one row of k floats to the activation type (k a multiple of its block size).
using QuantizeFn = void (*)(const float* x, void* y, int64_t k);

// out[a * out_stride + w] = dot(weight row w, activation row a) for w < n_w, a < n_a. Rows are
// w_stride / a_stride bytes apart; k is the row length in elements.
using GemmFn = void (*)(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a,
                        size_t a_stride, int64_t n_a, float* out, size_t out_stride);

// The packed prefill path (optional): 16 weight rows unpacked once into per-thread scratch, then
// multiplied with every activation row (matmul_x86_packed.h).
using PackedBytesFn = size_t (*)(int64_t k);
using PackFn = void (*)(int64_t k, const std::byte* w, size_t w_stride, int64_t rows, std::byte* packed);
using PackedGemmFn = void (*)(int64_t k, const std::byte* packed, int64_t rows, const std::byte* a,
                              size_t a_stride, int64_t n_a, float* out, size_t out_stride);

// A one-time rearrangement of a rows x k weight matrix into a kernel's faster layout, same size
// (the cpu plan makes it at compile time, weight_repack.h). Works on any range of whole row
// groups, so it can be split over threads.
using RepackFn = void (*)(const std::byte* src, std::byte* dst, int64_t rows, int64_t k);
// Row `row` of a rows x k matrix in a repacked layout, written to out in the file's row layout.
using UnpackRowFn = void (*)(const std::byte* w, int64_t rows, int64_t k, int64_t row, std::byte* out);

// The 16-row groups of up to kMaxGemvParts matrices of one type and row length, read as one list
// (a layer's q, k and v at decode): the list's group i is group i - start[p] of part p, where
// start[p] <= i < start[p + 1].
inline constexpr size_t kMaxGemvParts = 4;
struct GemvParts {
  std::array<const std::byte*, kMaxGemvParts> w{};
  std::array<float*, kMaxGemvParts> out{};
  std::array<int64_t, kMaxGemvParts + 1> start{};
  size_t n = 0;
  size_t group_bytes = 0;  // one group of 16 rows
};
// The 16 outputs of each group in [g0, g1) of the list: dot products with one activation row a.
using GemvPartsFn = void (*)(int64_t k, const GemvParts& parts, int64_t g0, int64_t g1, const std::byte* a);

struct MatmulKernel {
  graph::DType weight = graph::DType::F32;
  ActType act = ActType::F32;
  QuantizeFn quantize = nullptr;  // null: activations used as they are (f32)
  GemmFn gemm = nullptr;
  PackedBytesFn packed_bytes = nullptr;
  PackFn pack = nullptr;
  PackedGemmFn packed_gemm = nullptr;
  // Set on a repacked-layout kernel: the repack, its layout's name, and the row groups that the
  // work split must keep whole.
  RepackFn repack = nullptr;
  const char* layout = "";
  int64_t row_align = 1;
  // Set on a repacked-layout kernel: one row of a repacked matrix back in the weight type's
  // row-major bytes, for row lookups (an embedding table that is also the tied output weight).
  UnpackRowFn unpack_row = nullptr;
  // Set on a 16-row-group layout: one activation row times groups of several matrices in one walk,
  // so a task's memory streams run on across the matrices' boundaries.
  GemvPartsFn gemv_parts = nullptr;
};

// The matmul table: every kernel a tier has, one row each. A row is the weight type's kernel in the
// file's row-major layout (kernel->repack null) or in a layout the cpu plan repacks the weights into
// at load (kernel->layout names it), with the decode strategies (DecodeStrategy, isa.h) it serves:
// every one (kEveryWalk: the file layout's default kernel, or a repacked layout with one walk), or
// those it names. A type's rows that name strategies name each at most once; a row naming a
// strategy overrides the type's kEveryWalk rows under it: another walk of a repacked layout (the
// same repack), or a file-layout kernel, which keeps that strategy's weights in the file's layout.
// The lookups below are the only way from (weight type, tier, layout, strategy) to a kernel.
using Walks = uint8_t;  // a set of decode strategies: bit s for DecodeStrategy s
constexpr Walks walks_of(DecodeStrategy s) { return static_cast<Walks>(1u << static_cast<unsigned>(s)); }
constexpr Walks kSpread = walks_of(DecodeStrategy::Spread);
constexpr Walks kLockstep = walks_of(DecodeStrategy::Lockstep);
constexpr Walks kSequential = walks_of(DecodeStrategy::Sequential);
constexpr Walks kEveryWalk = kSpread | kLockstep | kSequential;
struct MatmulRow {
  const MatmulKernel* kernel;
  Walks walks = kEveryWalk;
};
// Each tier's rows (matmul_scalar.cpp; matmul_x86_impl.h compiled per tier). Empty for a tier the
// build has no code for (not an x86 build: the tier is never selected).
std::span<const MatmulRow> matmul_rows_scalar();
std::span<const MatmulRow> matmul_rows_avx2();
std::span<const MatmulRow> matmul_rows_avx512();
std::span<const MatmulRow> matmul_rows_avx512bf16();  // its bf16 rows only (isa.h)
// The tier's rows (scalar for anything below AVX2).
std::span<const MatmulRow> matmul_rows(Isa isa);

// The tier's kernel for the weight type in the file's layout; nullptr when the tier has none of its own.
const MatmulKernel* matmul_kernel_for(Isa isa, graph::DType weight);
// The file-layout kernel of the highest tier up to `isa` that has one (the scalar tier has every
// weight type the kernel table admits; nullptr for any other type).
const MatmulKernel* best_matmul_kernel(Isa isa, graph::DType weight);
// The kernel a decode under `strategy` runs for the weight type at this tier: the row naming the
// strategy, else the type's repacked kEveryWalk row; nullptr where neither exists (the file layout's
// kernel, matmul_kernel_for, runs). A file-layout kernel (repack null) where the strategy keeps the
// weights in the file's layout. avx512bf16: the avx512 tier's for any type but bf16.
const MatmulKernel* decode_matmul_kernel(Isa isa, graph::DType weight, DecodeStrategy strategy);
// decode_matmul_kernel where it is a repacked layout's kernel, else nullptr.
const MatmulKernel* repacked_matmul_kernel(Isa isa, graph::DType weight, DecodeStrategy strategy);
// The strategies of a row by name ("" for kEveryWalk; "spread", "lockstep, sequential", ...), for
// listings.
std::string walks_name(Walks w);

// Activation converters (scalar; exact emulation of llama.cpp's x86 quantize_row_q8_0/q8_1 and
// quantize_row_q8_K_ref, and of its f16/bf16 rounding).
void quantize_row_f16(const float* x, void* y, int64_t k);
void quantize_row_bf16(const float* x, void* y, int64_t k);
void quantize_row_q8_0(const float* x, void* y, int64_t k);
void quantize_row_q8_1(const float* x, void* y, int64_t k);
void quantize_row_q8_k(const float* x, void* y, int64_t k);

// The work split shared by matmul and the fused matmuls (matmul_fused.cpp): up to kSmallM activation
// rows split the weight rows only (decode); from kPackMinM rows a kernel with a packed path packs
// kPackRows weight rows at a time; otherwise tiles of kTileRows weight rows x kTileActs activations.
inline constexpr int64_t kSmallM = 4;
inline constexpr int64_t kTileRows = 64;
inline constexpr int64_t kTileActs = 64;
inline constexpr int64_t kPackMinM = 16;
inline constexpr int64_t kPackRows = 16;

// Whether m activation rows take the packed prefill path. Not under batch_invariant for k-quants (the
// packed path scales each 16- or 32-weight chunk in f32, the gemm each 256-weight super-block) nor
// for a row-major layout (AVX2's Q8_0, which has no 16-row layout: its packed path sums a row's
// blocks in another order than the row kernel), so that a row's result never depends on how many
// rows its step holds.
inline bool use_packed(const KernelArgs& a, const MatmulKernel& mk, int64_t m) {
  return mk.packed_gemm != nullptr && m >= kPackMinM &&
         !(a.batch_invariant && (mk.act == ActType::Q8_K || mk.repack == nullptr));
}

// Decode tasks: one share of the op's weight rows per thread, at least kMinDecodeTaskRows (four
// 16-row groups: the decode kernels walk four at a time), claimed dynamically so a thread that
// starts late takes fewer. Each task starts its memory streams cold and walks four of them in
// lockstep, a quarter of the task apart: fewer, longer tasks read faster. One per thread against
// the guided split before it (tasks of 1/(2 x threads) of the rows left, at least 256 rows), glass
// bench tg on 2 threads, alternating: SmolLM2 Q4_0 +8% (six pairs), Q4_K_M and Q8_0 +1-8%, F16
// and the 1B files within +-3%. At most kMaxDecodeTasks per op.
inline constexpr int64_t kMinDecodeTaskRows = 64;
inline constexpr int kMaxDecodeTasks = 256;
// The units (groups of `align` rows) a decode task takes, of `units` in the op.
inline int64_t decode_task_units(int64_t units, int64_t align, int threads) {
  const int64_t least = std::max<int64_t>(1, kMinDecodeTaskRows / align);
  const int64_t n = std::max(threads, 1);
  return std::max(least, (units + n - 1) / n);
}

// The decode split: f(n0, n1, thread) over weight rows [0, n_rows), in tasks of whole groups of
// mk.row_align rows (a repacked layout's groups).
template <class F>
void split_weight_rows(ThreadPool& pool, int64_t n_rows, const MatmulKernel& mk, const F& f) {
  const int64_t align = mk.row_align, units = (n_rows + align - 1) / align;
  const int64_t per_task = decode_task_units(units, align, pool.size());
  std::array<int64_t, kMaxDecodeTasks + 1> bounds{};
  int64_t n_tasks = 0;
  for (int64_t left = units; left > 0; ++n_tasks) {
    const int64_t take = n_tasks == kMaxDecodeTasks - 1 ? left : std::min(left, per_task);
    bounds[static_cast<size_t>(n_tasks + 1)] = bounds[static_cast<size_t>(n_tasks)] + take;
    left -= take;
  }
  pool.run(n_tasks, [&](int64_t t, int thread) {
    f(bounds[static_cast<size_t>(t)] * align, std::min(bounds[static_cast<size_t>(t + 1)] * align, n_rows),
      thread);
  });
}

// The activation rows a matmul kernel reads: input 0 converted to the weight type's blocks in
// a.converted (converted now when a.convert_now: nodes sharing x share the copy), or x itself.
struct Activations {
  const std::byte* data;
  size_t stride;  // bytes between rows
};
Activations matmul_activations(const KernelArgs& a, const MatmulKernel& mk);

// The kernel-table functions (data: a MatmulKernel).
Status matmul(const KernelArgs& a);
// Matmuls of one kernel reading one input (a layer's q, k and v projections), grouped by the cpu
// plan: at decode sizes one dispatch whose split runs over all of their weight rows, so the threads
// start and finish once instead of once per matmul (with one activation row and a 16-row-group
// layout, their groups as one list: GemvParts); larger products run one after another (each
// splits well alone).
inline constexpr size_t kMaxMatmulGroup = kMaxGemvParts;
Status matmul_group(std::span<const KernelArgs* const> parts);
// Per-thread scratch of the packed path.
size_t matmul_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                      const KernelData& data);
// The activations converted for the weight type: all rows of input 0.
InputConversion matmul_conversion(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                                  const KernelData& data);

}  // namespace glass::backend::cpu::kernels
