// Mixture of experts (formula in graph/ops/moe.cpp), computing only the chosen experts: route every
// token (top n_used of its router probabilities), group the step's tokens by expert, then per used
// expert gather its tokens' activations (converted to the weight type's blocks, like a matmul),
// run gate and up over that expert's weight rows (two halves of one tensor when fused), SwiGLU or
// GeGLU, down, and add the weighted (and per-expert scaled) rows into the tokens' outputs. Unchosen experts'
// weights are never read. Work splits over weight rows, as the matmul's decode path does, so a one-token step
// still uses every thread.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/vec_ops.h"
#include "graph/ops/formulas.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kActTile = 64;  // activation rows per gemm call (cache-sized tiles)

// The matmul routines for a weight type at the highest tier up to `isa` that has one.
const MatmulKernel& matmul_for(Isa isa, graph::DType w) {
  return *best_matmul_kernel(isa, w);  // the scalar tier covers every weight type the table admits
}

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// The scratch layout for T tokens: routing, per-expert token lists, and one expert's buffers.
struct Layout {
  size_t ids, weights, counts, cursor, order, rows, act_gate, act_up, gate_out, up_out, act_down, down_out,
      total;
};

Layout layout(int64_t T, int64_t E, int64_t D, int64_t F, int n_used, const MatmulKernel& g,
              const MatmulKernel& u, const MatmulKernel& d) {
  const auto t = static_cast<size_t>(T), k = static_cast<size_t>(n_used);
  Layout l{};
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t here = at;
    at += align64(bytes);
    return here;
  };
  l.ids = take(t * k * sizeof(int32_t));
  l.weights = take(t * k * sizeof(float));
  l.counts = take(static_cast<size_t>(E + 1) * sizeof(int32_t));
  l.cursor = take(static_cast<size_t>(E) * sizeof(int32_t));
  l.order = take(t * k * sizeof(int32_t));  // token * n_used + j, grouped by expert
  l.rows = take(t * sizeof(int32_t));       // the tokens of one expert
  l.act_gate = take(t * act_row_bytes(g.act, D));
  l.act_up = take(t * act_row_bytes(u.act, D));
  l.gate_out = take(t * static_cast<size_t>(F) * sizeof(float));
  l.up_out = take(t * static_cast<size_t>(F) * sizeof(float));
  l.act_down = take(t * act_row_bytes(d.act, F));
  l.down_out = take(t * static_cast<size_t>(D) * sizeof(float));
  l.total = at;
  return l;
}

// Converts rows x[rows[i]] (f32, k wide) to the kernel's activation type, contiguously.
void gather_acts(ThreadPool& pool, const MatmulKernel& mk, const float* x, int64_t k, const int32_t* rows,
                 int64_t n, std::byte* dst) {
  const size_t stride = act_row_bytes(mk.act, k);
  parallel_for(pool, n, 4, [&](int64_t i0, int64_t i1, int) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* src = x + static_cast<int64_t>(rows == nullptr ? i : rows[i]) * k;
      std::byte* out = dst + static_cast<size_t>(i) * stride;
      if (mk.quantize != nullptr)
        mk.quantize(src, out, k);
      else
        std::memcpy(out, src, static_cast<size_t>(k) * sizeof(float));
    }
  });
}

// out[m, n] = dot(w row n, act row m) for n < N rows of one expert, m < M activation rows.
void expert_gemm(ThreadPool& pool, const MatmulKernel& mk, int64_t K, const std::byte* w, int64_t N,
                 const std::byte* act, int64_t M, float* out) {
  const size_t w_stride = *graph::dtype_bytes(mk.weight, static_cast<uint64_t>(K));
  const size_t a_stride = act_row_bytes(mk.act, K);
  const int64_t grain = std::max<int64_t>(16, N / (static_cast<int64_t>(pool.size()) * 4));
  parallel_for(pool, N, grain, [&](int64_t n0, int64_t n1, int) {
    for (int64_t m0 = 0; m0 < M; m0 += kActTile)
      mk.gemm(K, w + static_cast<size_t>(n0) * w_stride, w_stride, n1 - n0,
              act + static_cast<size_t>(m0) * a_stride, a_stride, std::min(kActTile, M - m0),
              out + m0 * N + n0, static_cast<size_t>(N));
  });
}

}  // namespace

const MoeKernel& moe_kernel(Isa isa) {
  static const MoeKernel kScalar{Isa::Scalar, &vec_ops_scalar()};
  static const MoeKernel kAvx2{Isa::Avx2, &vec_ops_avx2()};
  static const MoeKernel kAvx512{Isa::Avx512, &vec_ops_avx512()};
  static const MoeKernel kAvx512Bf16{Isa::Avx512Bf16, &vec_ops_avx512()};  // its bf16 experts' matmuls
  switch (isa) {
    case Isa::Avx512Bf16:
      return kAvx512Bf16;
    case Isa::Avx512:
      return kAvx512;
    case Isa::Avx2:
      return kAvx2;
    default:
      return kScalar;
  }
}

size_t moe_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int,
                   const KernelData& data) {
  const auto& mk = data_of<MoeKernel>(data);
  const graph::Shape& gate = g.node(n.inputs[2]).shape;  // [n_expert, ffn (2 ffn fused), dim]
  const auto& m = std::get<graph::MoeAttrs>(n.attrs);
  const int64_t T = graph::resolve(g.node(n.inputs[0]).shape, max).dims[0];
  return layout(T, gate[0].value, gate[2].value, m.fused_gate_up ? gate[1].value / 2 : gate[1].value,
                m.n_used, matmul_for(mk.isa, g.node(n.inputs[2]).dtype),
                matmul_for(mk.isa, g.node(n.inputs[3]).dtype), matmul_for(mk.isa, g.node(n.inputs[4]).dtype))
      .total;
}

Status moe(const KernelArgs& a) {
  const auto& mk = data_of<MoeKernel>(a.data);
  const auto& m = std::get<graph::MoeAttrs>(a.node.attrs);
  const TensorView& x = a.in[0];
  const TensorView& probs = a.in[1];
  const TensorView &gate = a.in[2], &up = a.in[3], &down = a.in[4];
  const float* scale = a.node.inputs.size() == 6 ? a.in[5].f32() : nullptr;
  const bool biased = a.node.inputs.size() == 8;  // gate / up [E, F] and down [E, D] biases (gpt-oss)
  const int64_t T = x.dim(0), D = x.dim(1), E = gate.dim(0),
                F = m.fused_gate_up ? gate.dim(1) / 2 : gate.dim(1);
  const int k = m.n_used;
  const MatmulKernel& gk = matmul_for(mk.isa, gate.dtype);
  const MatmulKernel& uk = matmul_for(mk.isa, up.dtype);
  const MatmulKernel& dk = matmul_for(mk.isa, down.dtype);
  const Layout l = layout(T, E, D, F, k, gk, uk, dk);
  auto at = [&](size_t off) { return a.scratch + off; };
  auto* ids = reinterpret_cast<int32_t*>(at(l.ids));
  auto* weights = reinterpret_cast<float*>(at(l.weights));
  auto* counts = reinterpret_cast<int32_t*>(at(l.counts));
  auto* order = reinterpret_cast<int32_t*>(at(l.order));

  // Route: the k largest probabilities of each token (ties to the lower index), renormalised.
  std::fill(counts, counts + E + 1, 0);
  for (int64_t t = 0; t < T; ++t) {
    const float* p = probs.f32() + t * E;
    int32_t* chosen = ids + t * k;
    float* w = weights + t * k;
    double total = 0.0;
    for (int j = 0; j < k; ++j) {
      int32_t best = -1;
      for (int32_t e = 0; e < E; ++e) {
        if (std::find(chosen, chosen + j, e) != chosen + j) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      chosen[j] = best;
      w[j] = p[best];
      total += p[best];
      ++counts[best + 1];
    }
    if (m.normalize)
      for (int j = 0; j < k; ++j) w[j] = static_cast<float>(w[j] / total);
  }
  // Group (token, j) pairs by expert: counts becomes the start of each expert's run in `order`.
  for (int64_t e = 0; e < E; ++e) counts[e + 1] += counts[e];
  auto* cursor = reinterpret_cast<int32_t*>(at(l.cursor));
  std::copy(counts, counts + E, cursor);
  for (int64_t t = 0; t < T; ++t)  // in token order within each expert
    for (int j = 0; j < k; ++j) order[cursor[ids[t * k + j]]++] = static_cast<int32_t>(t * k + j);

  std::fill(a.out.f32(), a.out.f32() + T * D, 0.0f);
  const auto* vec = mk.ops;
  auto* rows = reinterpret_cast<int32_t*>(at(l.rows));
  for (int64_t e = 0; e < E; ++e) {
    const int64_t begin = counts[e], n_e = counts[e + 1] - begin;
    if (n_e == 0) continue;
    for (int64_t i = 0; i < n_e; ++i) rows[i] = order[begin + i] / k;
    auto* g_out = reinterpret_cast<float*>(at(l.gate_out));
    auto* u_out = reinterpret_cast<float*>(at(l.up_out));
    auto* y = reinterpret_cast<float*>(at(l.down_out));
    const std::byte* g_act = at(l.act_gate);
    gather_acts(a.pool, gk, x.f32(), D, rows, n_e, at(l.act_gate));
    const std::byte* u_act = g_act;
    if (uk.act != gk.act || uk.quantize != gk.quantize) {
      gather_acts(a.pool, uk, x.f32(), D, rows, n_e, at(l.act_up));
      u_act = at(l.act_up);
    }
    // Expert e's gate and up rows: its slices of two tensors, or (fused) the two halves of its 2F rows.
    const size_t half = *graph::dtype_bytes(gate.dtype, static_cast<uint64_t>(F * D));
    const size_t gw = m.fused_gate_up ? 2 * half : half;
    const size_t uw = *graph::dtype_bytes(up.dtype, static_cast<uint64_t>(F * D));
    const size_t dw = *graph::dtype_bytes(down.dtype, static_cast<uint64_t>(D * F));
    const std::byte* up_rows = m.fused_gate_up ? gate.bytes() + static_cast<size_t>(e) * gw + half
                                               : up.bytes() + static_cast<size_t>(e) * uw;
    expert_gemm(a.pool, gk, D, gate.bytes() + static_cast<size_t>(e) * gw, F, g_act, n_e, g_out);
    expert_gemm(a.pool, uk, D, up_rows, F, u_act, n_e, u_out);
    const float* gate_bias = biased ? a.in[5].f32() + e * F : nullptr;
    const float* up_bias = biased ? a.in[6].f32() + e * F : nullptr;
    parallel_for(a.pool, n_e, 4, [&](int64_t i0, int64_t i1, int) {
      for (int64_t i = i0; i < i1; ++i) {
        float* g = g_out + i * F;
        float* u = u_out + i * F;
        if (biased)
          for (int64_t f = 0; f < F; ++f) g[f] += gate_bias[f], u[f] += up_bias[f];
        switch (m.activation) {
          case graph::MoeActivation::GeGlu:
            for (int64_t f = 0; f < F; ++f) g[f] = graph::gelu_tanh(g[f]) * u[f];
            break;
          case graph::MoeActivation::SwiGluOai:
            for (int64_t f = 0; f < F; ++f) g[f] = graph::swiglu_oai(g[f], u[f]);
            break;
          default:
            vec->swiglu(g, u, g, F);
        }
      }
    });
    gather_acts(a.pool, dk, g_out, F, nullptr, n_e, at(l.act_down));
    expert_gemm(a.pool, dk, F, down.bytes() + static_cast<size_t>(e) * dw, D, at(l.act_down), n_e, y);
    for (int64_t i = 0; i < n_e; ++i) {  // each token appears once per expert
      const float w = scale != nullptr ? weights[order[begin + i]] * scale[e] : weights[order[begin + i]];
      float* o = a.out.f32() + static_cast<int64_t>(rows[i]) * D;
      const float* down_bias = biased ? a.in[7].f32() + e * D : nullptr;
      if (biased)
        for (int64_t d = 0; d < D; ++d) o[d] += w * (y[i * D + d] + down_bias[d]);
      else
        for (int64_t d = 0; d < D; ++d) o[d] += w * y[i * D + d];
    }
  }
  return {};
}

}  // namespace glass::backend::cpu::kernels
