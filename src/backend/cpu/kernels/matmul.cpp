// The ISA-neutral half of matmul: activation conversion, batching and the work split. Decode-sized
// products (few activation rows) split the weight rows across threads, so each thread streams its
// share of the weights once; prefill-sized ones split into tiles of weight rows x activation rows
// that fit in cache, each computed by the ISA's gemm.
#include "backend/cpu/kernels/matmul.h"

#include <algorithm>

namespace glass::backend::cpu::kernels {
namespace {

struct Dims {
  int64_t M, N, K;
  std::array<int64_t, 2> ob{1, 1}, xb{1, 1}, wb{1, 1};  // batch extents (output, x, w)
};

Dims dims_of(const TensorView& x, const TensorView& w, const TensorView& out) {
  Dims d;
  d.K = x.last();
  d.M = x.dim(x.ext.rank - 2);
  d.N = w.dim(w.ext.rank - 2);
  // Batch dims right-aligned in the two slots.
  auto batch = [](const TensorView& t, std::array<int64_t, 2>& slots) {
    const int n = t.ext.rank - 2;
    for (int i = 0; i < n; ++i) {
      const int slot = 2 - n + i;
      slots[static_cast<size_t>(slot)] = t.dim(i);
    }
  };
  batch(out, d.ob);
  batch(x, d.xb);
  batch(w, d.wb);
  return d;
}

// One matrix of the batch: act holds its M activation rows, a_stride bytes apart.
void product(const KernelArgs& a, const MatmulKernel& mk, const std::byte* act, size_t a_stride,
             const std::byte* wm, float* om, const Dims& d) {
  const size_t w_stride = *graph::dtype_bytes(a.in[1].dtype, static_cast<uint64_t>(d.K));
  const auto N = static_cast<size_t>(d.N);
  if (d.M <= kSmallM) {
    split_weight_rows(a.pool, d.N, mk, [&](int64_t n0, int64_t n1, int) {
      mk.gemm(d.K, wm + static_cast<size_t>(n0) * w_stride, w_stride, n1 - n0, act, a_stride, d.M, om + n0,
              N);
    });
    return;
  }
  if (use_packed(a, mk, d.M)) {
    const size_t per_thread = mk.packed_bytes(d.K);
    parallel_for(a.pool, (d.N + kPackRows - 1) / kPackRows, 1, [&](int64_t g0, int64_t g1, int thread) {
      std::byte* buf = a.scratch + static_cast<size_t>(thread) * per_thread;
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t n0 = g * kPackRows, rows = std::min(kPackRows, d.N - n0);
        mk.pack(d.K, wm + static_cast<size_t>(n0) * w_stride, w_stride, rows, buf);
        mk.packed_gemm(d.K, buf, rows, act, a_stride, d.M, om + n0, N);
      }
    });
    return;
  }
  const int64_t n_tiles = (d.N + kTileRows - 1) / kTileRows;
  const int64_t m_tiles = (d.M + kTileActs - 1) / kTileActs;
  parallel_for(a.pool, n_tiles * m_tiles, 1, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = (t / m_tiles) * kTileRows, m0 = (t % m_tiles) * kTileActs;
      const int64_t nn = std::min(kTileRows, d.N - n0), mm = std::min(kTileActs, d.M - m0);
      mk.gemm(d.K, wm + static_cast<size_t>(n0) * w_stride, w_stride, nn,
              act + static_cast<size_t>(m0) * a_stride, a_stride, mm,
              om + static_cast<size_t>(m0) * N + static_cast<size_t>(n0), N);
    }
  });
}

}  // namespace

Activations matmul_activations(const KernelArgs& a, const MatmulKernel& mk) {
  const TensorView& x = a.in[0];
  const int64_t K = x.last();
  if (mk.quantize == nullptr) return {x.bytes(), static_cast<size_t>(K) * sizeof(float)};
  // Every row of x, once per step (nodes sharing x share the copy).
  const size_t stride = act_row_bytes(mk.act, K);
  if (a.convert_now)
    parallel_for(a.pool, x.rows(), 4, [&](int64_t m0, int64_t m1, int) {
      for (int64_t m = m0; m < m1; ++m)
        mk.quantize(x.f32() + m * K, a.converted + static_cast<size_t>(m) * stride, K);
    });
  return {a.converted, stride};
}

Status matmul(const KernelArgs& a) {
  const auto& mk = data_of<MatmulKernel>(a.data);
  const TensorView& x = a.in[0];
  const TensorView& w = a.in[1];
  const Dims d = dims_of(x, w, a.out);
  if (d.M == 0 || d.N == 0) return {};
  const size_t w_bytes = *graph::dtype_bytes(w.dtype, static_cast<uint64_t>(d.N * d.K));
  const auto [act, a_stride] = matmul_activations(a, mk);
  for (int64_t b0 = 0; b0 < d.ob[0]; ++b0)
    for (int64_t b1 = 0; b1 < d.ob[1]; ++b1) {
      const int64_t xbi = (d.xb[0] == 1 ? 0 : b0) * d.xb[1] + (d.xb[1] == 1 ? 0 : b1);
      const int64_t wbi = (d.wb[0] == 1 ? 0 : b0) * d.wb[1] + (d.wb[1] == 1 ? 0 : b1);
      product(a, mk, act + static_cast<size_t>(xbi * d.M) * a_stride, a_stride,
              w.bytes() + static_cast<size_t>(wbi) * w_bytes, a.out.f32() + (b0 * d.ob[1] + b1) * d.M * d.N,
              d);
    }
  return {};
}

namespace {
// One activation row times matrices of whole 16-row groups (a layer's q, k and v at decode): their
// groups as one list, one task per thread, so that no thread walks a short matrix on its own with
// four cold streams (SmolLM2's k and v are 12 groups each). False where the layout has no such
// walk or a matrix ends in a partial group; the caller then runs the parts one by one.
bool gemv_parts(std::span<const KernelArgs* const> parts, const MatmulKernel& mk, int64_t K,
                const std::byte* act) {
  if (mk.gemv_parts == nullptr || mk.row_align != 16 || parts.size() > kMaxGemvParts) return false;
  const KernelArgs& first = *parts[0];
  const size_t w_stride = *graph::dtype_bytes(first.in[1].dtype, static_cast<uint64_t>(K));
  GemvParts gp;
  gp.n = parts.size();
  gp.group_bytes = 16 * w_stride;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t rows = parts[i]->in[1].dim(0);
    if (rows % 16 != 0) return false;
    gp.w[i] = parts[i]->in[1].bytes();
    gp.out[i] = parts[i]->out.f32();
    gp.start[i + 1] = gp.start[i] + rows / 16;
  }
  const int64_t groups = gp.start[gp.n];
  const int64_t per_task = decode_task_units(groups, 16, first.pool.size());
  first.pool.run((groups + per_task - 1) / per_task, [&](int64_t t, int) {
    mk.gemv_parts(K, gp, t * per_task, std::min(groups, (t + 1) * per_task), act);
  });
  return true;
}
}  // namespace

Status matmul_group(std::span<const KernelArgs* const> parts) {
  const KernelArgs& first = *parts[0];
  const auto& mk = data_of<MatmulKernel>(first.data);
  const int64_t M = first.in[0].dim(first.in[0].ext.rank - 2), K = first.in[0].last();
  bool together = M > 0 && M <= kSmallM;
  for (const KernelArgs* p : parts) together = together && p->in[1].ext.rank == 2 && p->out.ext.rank == 2;
  if (!together) {
    for (const KernelArgs* p : parts)
      if (auto st = matmul(*p); !st) return st;
    return {};
  }
  const Activations act = matmul_activations(first, mk);  // the parts share input 0's copy
  if (M == 1 && gemv_parts(parts, mk, K, act.data)) return {};
  struct Task {
    size_t part;
    int64_t n0, n1;
  };
  std::array<Task, kMaxDecodeTasks> tasks{};
  const int64_t align = mk.row_align;
  int64_t all_units = 0;
  for (const KernelArgs* p : parts) all_units += (p->in[1].dim(0) + align - 1) / align;
  const int64_t per_task = decode_task_units(all_units, align, first.pool.size());
  size_t n_tasks = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const int64_t rows = parts[i]->in[1].dim(0), units = (rows + align - 1) / align;
    for (int64_t u = 0; u < units;) {
      // Keep a slot for each part after this one.
      const bool last_slot = n_tasks + (parts.size() - i) >= tasks.size();
      const int64_t take = last_slot ? units - u : std::min(units - u, per_task);
      tasks[n_tasks++] = {i, u * align, std::min((u + take) * align, rows)};
      u += take;
    }
  }
  first.pool.run(static_cast<int64_t>(n_tasks), [&](int64_t t, int) {
    const Task& task = tasks[static_cast<size_t>(t)];
    const KernelArgs& p = *parts[task.part];
    const int64_t N = p.in[1].dim(0);
    const size_t w_stride = *graph::dtype_bytes(p.in[1].dtype, static_cast<uint64_t>(K));
    mk.gemm(K, p.in[1].bytes() + static_cast<size_t>(task.n0) * w_stride, w_stride, task.n1 - task.n0,
            act.data, act.stride, M, p.out.f32() + task.n0, static_cast<size_t>(N));
  });
  return {};
}

size_t matmul_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings&, int threads,
                      const KernelData& data) {
  const auto& mk = data_of<MatmulKernel>(data);
  if (mk.packed_bytes == nullptr) return 0;
  const graph::Shape& x = g.node(n.inputs[0]).shape;
  return static_cast<size_t>(threads) * ((mk.packed_bytes(x.back().value) + 63) / 64 * 64);
}

InputConversion matmul_conversion(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                                  const KernelData& data) {
  const auto& mk = data_of<MatmulKernel>(data);
  if (mk.quantize == nullptr) return {};
  const graph::Extents x = graph::resolve(g.node(n.inputs[0]).shape, max);
  const int64_t K = x.dims[static_cast<size_t>(x.rank - 1)];
  static constexpr const char* kNames[] = {"f32", "f16", "bf16", "q8_0", "q8_1", "q8_k", "bf16"};
  return {static_cast<size_t>(x.numel() / K) * act_row_bytes(mk.act, K),
          reinterpret_cast<uintptr_t>(mk.quantize), kNames[static_cast<size_t>(mk.act)]};
}

std::span<const MatmulRow> matmul_rows(Isa isa) {
  switch (isa) {
    case Isa::Avx512Bf16:
      return matmul_rows_avx512bf16();
    case Isa::Avx512:
      return matmul_rows_avx512();
    case Isa::Avx2:
      return matmul_rows_avx2();
    default:
      return matmul_rows_scalar();
  }
}

const MatmulKernel* matmul_kernel_for(Isa isa, graph::DType weight) {
  for (const MatmulRow& r : matmul_rows(isa))
    if (r.kernel->weight == weight && r.kernel->repack == nullptr && r.walks == kEveryWalk) return r.kernel;
  return nullptr;
}

const MatmulKernel* best_matmul_kernel(Isa isa, graph::DType weight) {
  for (const Isa tier : {Isa::Avx512Bf16, Isa::Avx512, Isa::Avx2, Isa::Scalar}) {
    if (tier > isa) continue;
    if (const MatmulKernel* k = matmul_kernel_for(tier, weight)) return k;
  }
  return nullptr;
}

const MatmulKernel* decode_matmul_kernel(Isa isa, graph::DType weight, DecodeStrategy strategy) {
  const Walks wanted = walks_of(strategy);
  const MatmulKernel* every = nullptr;
  for (const MatmulRow& r : matmul_rows(isa)) {
    if (r.kernel->weight != weight) continue;
    if (r.walks != kEveryWalk && (r.walks & wanted) != 0) return r.kernel;
    if (r.walks == kEveryWalk && r.kernel->repack != nullptr) every = r.kernel;
  }
  // The avx512bf16 tier adds bf16 rows to the avx512 tier's (isa.h).
  if (every == nullptr && isa == Isa::Avx512Bf16) return decode_matmul_kernel(Isa::Avx512, weight, strategy);
  return every;
}

const MatmulKernel* repacked_matmul_kernel(Isa isa, graph::DType weight, DecodeStrategy strategy) {
  const MatmulKernel* k = decode_matmul_kernel(isa, weight, strategy);
  return k != nullptr && k->repack != nullptr ? k : nullptr;
}

std::string walks_name(Walks w) {
  if (w == kEveryWalk) return "";
  std::string names;
  for (const DecodeStrategy s :
       {DecodeStrategy::Spread, DecodeStrategy::Lockstep, DecodeStrategy::Sequential})
    if ((w & walks_of(s)) != 0)
      names += std::string(names.empty() ? "" : ", ") + std::string(decode_strategy_name(s));
  return names;
}

}  // namespace glass::backend::cpu::kernels
