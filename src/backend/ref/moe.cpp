// The mixture-of-experts kernel (formula in graph/ops/moe.cpp) as plain loops: per token, choose
// the experts, then run only those experts' rows, one weight row expanded to f32 at a time.
// Scratch: one weight row (max(dim, ffn) floats), the ffn activations, and the chosen experts
// with their weights (n_used each).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backend/ref/kernel.h"
#include "graph/ops/formulas.h"

namespace glass::backend::ref {
namespace {

// Row `row` of a stacked expert tensor, `k` elements long, as f32 into dst.
Status expert_row(const TensorRef& w, int64_t row, int64_t k, float* dst) {
  const auto row_bytes = static_cast<int64_t>(*graph::dtype_bytes(w.dtype, static_cast<uint64_t>(k)));
  TensorRef r{static_cast<std::byte*>(w.data) + row * row_bytes, {}, w.dtype};
  r.ext.rank = 1;
  r.ext.dims[0] = k;
  return load_row_f32(r, 0, dst);
}

double dot(const float* a, const float* b, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

}  // namespace

size_t moe_scratch_floats(int64_t dim, int64_t ffn, int n_used) {
  return static_cast<size_t>(std::max(dim, ffn) + ffn + 2 * n_used);
}

Status moe(const KernelArgs& a) {
  const auto& m = std::get<graph::MoeAttrs>(a.node.attrs);
  const TensorRef& x = a.in[0];
  const TensorRef& probs = a.in[1];
  const TensorRef& gate = a.in[2];
  const TensorRef& up = a.in[3];
  const TensorRef& down = a.in[4];
  const float* scale = a.node.inputs.size() == 6 ? a.in[5].f32() : nullptr;
  const bool biased = a.node.inputs.size() == 8;  // gate / up [E, F] and down [E, D] biases
  // Fused: expert e's gate row f is row e * 2F + f of the one tensor, its up row e * 2F + F + f.
  const int64_t T = x.dim(0), D = x.dim(1), E = gate.dim(0),
                F = m.fused_gate_up ? gate.dim(1) / 2 : gate.dim(1);
  const int64_t stride = m.fused_gate_up ? 2 * F : F, up_offset = m.fused_gate_up ? F : 0;
  float* row = a.scratch;
  float* h = row + std::max(D, F);
  float* chosen = h + F;  // expert ids (exact as floats), then their weights
  float* weight = chosen + m.n_used;
  for (int64_t t = 0; t < T; ++t) {
    const float* p = probs.f32() + t * E;
    double total = 0.0;
    for (int j = 0; j < m.n_used; ++j) {  // the j-th largest probability, ties to the lower index
      int64_t best = -1;
      for (int64_t e = 0; e < E; ++e) {
        if (std::find(chosen, chosen + j, static_cast<float>(e)) != chosen + j) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      chosen[j] = static_cast<float>(best);
      weight[j] = p[best];
      total += p[best];
    }
    if (m.normalize)
      for (int j = 0; j < m.n_used; ++j) weight[j] = static_cast<float>(weight[j] / total);

    const float* xt = x.f32() + t * D;
    float* out = a.out.f32() + t * D;
    std::fill(out, out + D, 0.0f);
    for (int j = 0; j < m.n_used; ++j) {
      const auto e = static_cast<int64_t>(chosen[j]);
      for (int64_t f = 0; f < F; ++f) {  // h = act(gate_e x) * up_e x
        if (auto st = expert_row(gate, e * stride + f, D, row); !st) return st;
        double g = dot(xt, row, D);
        if (auto st = expert_row(up, e * stride + up_offset + f, D, row); !st) return st;
        double u = dot(xt, row, D);
        if (biased) {
          g += a.in[5].f32()[e * F + f];
          u += a.in[6].f32()[e * F + f];
        }
        if (m.activation == graph::MoeActivation::SwiGluOai) {
          h[f] = graph::swiglu_oai(static_cast<float>(g), static_cast<float>(u));
          continue;
        }
        const double act = m.activation == graph::MoeActivation::GeGlu
                               ? graph::gelu_tanh(static_cast<float>(g))
                               : g / (1.0 + std::exp(-g));
        h[f] = static_cast<float>(act * u);
      }
      const float w = scale != nullptr ? weight[j] * scale[e] : weight[j];
      for (int64_t d = 0; d < D; ++d) {  // out += w_e * s_e * down_e h
        if (auto st = expert_row(down, e * D + d, F, row); !st) return st;
        out[d] += w * static_cast<float>(dot(h, row, F) + (biased ? a.in[7].f32()[e * D + d] : 0.0f));
      }
    }
  }
  return {};
}

}  // namespace glass::backend::ref
