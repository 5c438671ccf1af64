// The fused matmuls' work split (matmul_fused.h). Tiles follow matmul's split (matmul.h) so the
// dot products are the same gemm calls on the same activation copy; only where each tile lands
// differs: into per-thread scratch, then through the epilogue into the output.
#include "backend/cpu/kernels/matmul_fused.h"

#include <vector>

#include "graph/ops/formulas.h"

namespace glass::backend::cpu::kernels {
namespace {

// Weight rows per decode tile (whole repacked groups). The decode kernels walk four streams a
// quarter of the tile apart; with 64-row tiles those were four adjacent groups, and each weight of
// a swiglu was left every 4 groups for the other: 1024-row tiles made the 1B Q4_0 decode 10%
// faster and its Q8_0 6% (alternating pairs), and keep a tile's floats within the prefill tile's.
constexpr int64_t kDecodeBlock = 1024;

// Floats of one weight's tile at most, for M activation rows.
int64_t tile_floats(int64_t M) {
  return std::max({M * kPackRows, kTileRows * kTileActs, kSmallM * kDecodeBlock});
}

size_t round_up(size_t bytes) { return (bytes + 63) / 64 * 64; }

size_t packed_bytes(const MatmulKernel& mk, int64_t K) {
  return mk.packed_bytes == nullptr ? 0 : round_up(mk.packed_bytes(K));
}

size_t per_thread_bytes(const MatmulKernel& mk, int64_t K, int64_t M, size_t n_weights) {
  return packed_bytes(mk, K) + round_up(n_weights * static_cast<size_t>(tile_floats(M)) * sizeof(float));
}

// x [M, K] times each weight [N, K] (same type), tile by tile; every tile of every weight is
// computed into scratch (row stride ld = the tile's width) and handed to
// epi(m0, mm, n0, nn, tiles, ld) for output rows [m0, m0 + mm), columns [n0, n0 + nn).
template <size_t NW, class Epilogue>
void fused_product(const KernelArgs& a, const MatmulKernel& mk, const std::array<const std::byte*, NW>& w,
                   const Epilogue& epi) {
  const TensorView& x = a.in[0];
  const int64_t K = x.last(), M = x.rows(), N = a.out.last();
  if (M == 0 || N == 0) return;
  // A named struct, not a structured binding: clang 14 (clang-tidy) rejects lambdas capturing those.
  const Activations in = matmul_activations(a, mk);
  const std::byte* const act = in.data;
  const size_t a_stride = in.stride;
  const size_t w_stride = *graph::dtype_bytes(a.in[1].dtype, static_cast<uint64_t>(K));
  const size_t packed = packed_bytes(mk, K);
  const size_t per_thread = per_thread_bytes(mk, K, M, NW);
  auto tiles_of = [&](int thread) {
    std::byte* base = a.scratch + static_cast<size_t>(thread) * per_thread;
    std::array<float*, NW> t;
    for (size_t j = 0; j < NW; ++j)
      t[j] = reinterpret_cast<float*>(base + packed) + j * static_cast<size_t>(tile_floats(M));
    return t;
  };
  auto row = [&](const std::byte* wj, int64_t n0) { return wj + static_cast<size_t>(n0) * w_stride; };

  if (M <= kSmallM) {
    split_weight_rows(a.pool, N, mk, [&](int64_t n0, int64_t n1, int thread) {
      const std::array<float*, NW> t = tiles_of(thread);
      for (int64_t nb = n0; nb < n1; nb += kDecodeBlock) {
        const int64_t nn = std::min(kDecodeBlock, n1 - nb);
        if (NW > 1 && M == 1 && mk.gemv_parts != nullptr && nn % 16 == 0) {
          // The weights' tiles as one list of groups: one walk, its streams running on from one
          // weight into the next (the swiglu op per token, --profile, alternating: 1B Q4_0 on the
          // AVX2 tier 5.76 / 5.53, 5.96 / 5.56 ms; SmolLM2 Q4_0 575-585 -> 550-575 us).
          GemvParts gp;
          gp.n = NW;
          gp.group_bytes = 16 * w_stride;
          for (size_t j = 0; j < NW; ++j) {
            gp.w[j] = row(w[j], nb);
            gp.out[j] = t[j];
            gp.start[j + 1] = gp.start[j] + nn / 16;
          }
          mk.gemv_parts(K, gp, 0, gp.start[NW], act);
        } else {
          for (size_t j = 0; j < NW; ++j)
            mk.gemm(K, row(w[j], nb), w_stride, nn, act, a_stride, M, t[j], static_cast<size_t>(nn));
        }
        epi(0, M, nb, nn, t, nn);
      }
    });
    return;
  }
  if (use_packed(a, mk, M)) {
    parallel_for(a.pool, (N + kPackRows - 1) / kPackRows, 1, [&](int64_t g0, int64_t g1, int thread) {
      const std::array<float*, NW> t = tiles_of(thread);
      std::byte* buf = a.scratch + static_cast<size_t>(thread) * per_thread;
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t n0 = g * kPackRows, rows = std::min(kPackRows, N - n0);
        for (size_t j = 0; j < NW; ++j) {
          mk.pack(K, row(w[j], n0), w_stride, rows, buf);
          mk.packed_gemm(K, buf, rows, act, a_stride, M, t[j], static_cast<size_t>(rows));
        }
        epi(0, M, n0, rows, t, rows);
      }
    });
    return;
  }
  const int64_t n_tiles = (N + kTileRows - 1) / kTileRows;
  const int64_t m_tiles = (M + kTileActs - 1) / kTileActs;
  parallel_for(a.pool, n_tiles * m_tiles, 1, [&](int64_t t0, int64_t t1, int thread) {
    const std::array<float*, NW> t = tiles_of(thread);
    for (int64_t i = t0; i < t1; ++i) {
      const int64_t n0 = (i / m_tiles) * kTileRows, m0 = (i % m_tiles) * kTileActs;
      const int64_t nn = std::min(kTileRows, N - n0), mm = std::min(kTileActs, M - m0);
      for (size_t j = 0; j < NW; ++j)
        mk.gemm(K, row(w[j], n0), w_stride, nn, act + static_cast<size_t>(m0) * a_stride, a_stride, mm, t[j],
                static_cast<size_t>(nn));
      epi(m0, mm, n0, nn, t, nn);
    }
  });
}

const FusedMatmulKernel& kernel_of(const KernelArgs& a) { return data_of<FusedMatmulKernel>(a.data); }

}  // namespace

const FusedMatmulKernel* fused_matmul_kernel(Isa isa, const MatmulKernel* mk) {
  static const std::vector<FusedMatmulKernel> kAll = [] {
    std::vector<FusedMatmulKernel> all;
    for (const Isa tier : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
      for (const MatmulRow& r : matmul_rows(tier)) all.push_back({r.kernel, &vec_ops_for(tier)});
    return all;
  }();
  const VecOps* ops = &vec_ops_for(isa);
  for (const FusedMatmulKernel& k : kAll)
    if (k.mk == mk && k.ops == ops) return &k;
  return nullptr;
}

Status matmul_add(const KernelArgs& a) {
  const FusedMatmulKernel& fk = kernel_of(a);
  const int64_t N = a.out.last();
  const float* r = a.in[2].f32();
  float* o = a.out.f32();
  // o may be r: each element of r is read by the add that then writes it.
  fused_product<1>(
      a, *fk.mk, {a.in[1].bytes()},
      [&](int64_t m0, int64_t mm, int64_t n0, int64_t nn, const std::array<float*, 1>& t, int64_t ld) {
        for (int64_t m = 0; m < mm; ++m) {
          const int64_t at = (m0 + m) * N + n0;
          fk.ops->add(r + at, t[0] + m * ld, o + at, nn);
        }
      });
  return {};
}

Status matmul_glu(const KernelArgs& a) {
  const FusedMatmulKernel& fk = kernel_of(a);
  const int64_t N = a.out.last();
  float* o = a.out.f32();
  const bool swiglu = a.node.op == graph::Op::MatMulSwiGlu;
  fused_product<2>(
      a, *fk.mk, {a.in[1].bytes(), a.in[2].bytes()},
      [&](int64_t m0, int64_t mm, int64_t n0, int64_t nn, const std::array<float*, 2>& t, int64_t ld) {
        for (int64_t m = 0; m < mm; ++m) {
          const float* g = t[0] + m * ld;
          const float* u = t[1] + m * ld;
          float* y = o + (m0 + m) * N + n0;
          if (swiglu) {
            fk.ops->swiglu(g, u, y, nn);
          } else {
            for (int64_t i = 0; i < nn; ++i) y[i] = graph::gelu_tanh(g[i]) * u[i];
          }
        }
      });
  return {};
}

size_t fused_matmul_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                            int threads, const KernelData& data) {
  const auto& fk = data_of<FusedMatmulKernel>(data);
  const graph::Extents x = graph::resolve(g.node(n.inputs[0]).shape, max);
  const int64_t K = x.dims[static_cast<size_t>(x.rank - 1)];
  const int64_t M = K == 0 ? 0 : x.numel() / K;
  return static_cast<size_t>(threads) * per_thread_bytes(*fk.mk, K, M, n.op == graph::Op::MatMulAdd ? 1 : 2);
}

InputConversion fused_matmul_conversion(const graph::Graph& g, const graph::Node& n,
                                        const graph::Bindings& max, const KernelData& data) {
  return matmul_conversion(g, n, max, data_of<FusedMatmulKernel>(data).mk);
}

}  // namespace glass::backend::cpu::kernels
