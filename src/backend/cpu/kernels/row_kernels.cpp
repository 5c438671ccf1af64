// Row-wise kernels: rms_norm, swiglu / silu, broadcasting add / mul, rope and embedding. Each
// splits rows over the pool and calls the ISA's row routine (VecOps) or plain loops. All of them
// may run in place (out sharing input 0's buffer): every output element is written after the
// inputs it depends on were read.
#include <fmt/format.h>

#include <cmath>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/vec_ops.h"
#include "formats/quant.h"
#include "graph/ops/formulas.h"
#include "graph/ops/infer.h"

namespace glass::backend::cpu::kernels {
namespace {

const VecOps& ops_of(const KernelArgs& a) { return data_of<VecOps>(a.data); }

// Rows per task so a task is worth its hand-off: ~16k elements.
int64_t row_grain(int64_t row_len) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, row_len)); }

std::array<int64_t, 4> padded(const graph::Extents& e) {
  std::array<int64_t, 4> d{1, 1, 1, 1};
  for (int i = 0; i < e.rank; ++i) d[static_cast<size_t>(4 - e.rank + i)] = e.dims[static_cast<size_t>(i)];
  return d;
}

// Element strides of `in` against the output's padded extents; broadcast axes get 0.
std::array<int64_t, 4> broadcast_strides(const graph::Extents& in, const std::array<int64_t, 4>& out) {
  const auto d = padded(in);
  std::array<int64_t, 4> st{};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    const auto k = static_cast<size_t>(i);
    st[k] = d[k] == 1 && out[k] != 1 ? 0 : stride;
    stride *= d[k];
  }
  return st;
}

}  // namespace

Status rms_norm(const KernelArgs& a) {
  const float eps = std::get<graph::RmsNormAttrs>(a.node.attrs).eps;
  const TensorView& x = a.in[0];
  const int64_t n = x.last();
  const auto& ops = ops_of(a);
  parallel_for(a.pool, x.rows(), row_grain(n), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r)
      ops.rms_norm(x.f32() + r * n, a.in[1].f32(), a.out.f32() + r * n, n, eps);
  });
  return {};
}

Status swiglu(const KernelArgs& a) {
  const int64_t n = a.out.last();
  const auto& ops = ops_of(a);
  const bool gated = a.node.op == graph::Op::SwiGlu;
  parallel_for(a.pool, a.out.rows(), row_grain(n), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      if (gated)
        ops.swiglu(a.in[0].f32() + r * n, a.in[1].f32() + r * n, a.out.f32() + r * n, n);
      else
        ops.silu(a.in[0].f32() + r * n, a.out.f32() + r * n, n);
    }
  });
  return {};
}

// gelu / geglu (tanh form) and softcap, elementwise with the scalar formulas of graph/ops/formulas.h
// (std::tanh per element: exact to f32 rounding, like the ref kernel). The operands are contiguous
// and alike, so the work splits over elements, not rows: one long row (a decode step's softcapped
// logits, 262144 of them for Gemma) uses every thread.
Status tanh_activation(const KernelArgs& a) {
  const int64_t total = a.out.rows() * a.out.last();
  const graph::Op op = a.node.op;
  const float cap = op == graph::Op::Softcap ? std::get<graph::SoftcapAttrs>(a.node.attrs).cap : 0.0f;
  constexpr int64_t kGrain = 4096;
  parallel_for(a.pool, total, kGrain, [&](int64_t i0, int64_t i1, int) {
    const float* g = a.in[0].f32();
    float* y = a.out.f32();
    if (op == graph::Op::Softcap) {
      for (int64_t i = i0; i < i1; ++i) y[i] = graph::softcap(g[i], cap);
    } else if (op == graph::Op::GeGlu) {
      const float* u = a.in[1].f32();
      for (int64_t i = i0; i < i1; ++i) y[i] = graph::gelu_tanh(g[i]) * u[i];
    } else {
      for (int64_t i = i0; i < i1; ++i) y[i] = graph::gelu_tanh(g[i]);
    }
  });
  return {};
}

Status binary(const KernelArgs& a) {
  const auto od = padded(a.out.ext);
  const auto sa = broadcast_strides(a.in[0].ext, od);
  const auto sb = broadcast_strides(a.in[1].ext, od);
  const int64_t n = od[3], rows = od[0] * od[1] * od[2];
  const auto& ops = ops_of(a);
  const bool add = a.node.op == graph::Op::Add;
  parallel_for(a.pool, rows, row_grain(n), [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i2 = r % od[2], i1 = (r / od[2]) % od[1], i0 = r / (od[2] * od[1]);
      const float* x = a.in[0].f32() + i0 * sa[0] + i1 * sa[1] + i2 * sa[2];
      const float* y = a.in[1].f32() + i0 * sb[0] + i1 * sb[1] + i2 * sb[2];
      float* o = a.out.f32() + r * n;
      if (sa[3] == 1 && sb[3] == 1) {
        (add ? ops.add : ops.mul)(x, y, o, n);
        continue;
      }
      for (int64_t i = 0; i < n; ++i) {
        const float u = x[i * sa[3]], v = y[i * sb[3]];
        o[i] = add ? u + v : u * v;
      }
    }
  });
  return {};
}

// RoPE (Su et al. 2021): for pair i < n_rot / 2, theta = pos * freq_i (freq_i = prepared[i], divided
// by the optional factor), (a, b) -> (a cos - b sin, a sin + b cos); the ref kernel's formula.
std::vector<float> rope_prepare(const graph::Node& n) {
  return graph::rope_inv_freq(std::get<graph::RopeAttrs>(n.attrs));
}

size_t rope_scratch(const graph::Graph&, const graph::Node& n, const graph::Bindings&, int threads,
                    const KernelData&) {
  return static_cast<size_t>(threads) * static_cast<size_t>(std::get<graph::RopeAttrs>(n.attrs).n_rot) *
         sizeof(float);
}

Status rope(const KernelArgs& a) {
  const auto& r = std::get<graph::RopeAttrs>(a.node.attrs);
  const TensorView& x = a.in[0];
  const int64_t T = x.dim(0), H = x.dim(1), D = x.dim(2), half = r.n_rot / 2;
  const bool normal = r.mode == graph::RopeMode::Normal;
  const float* factors = a.node.inputs.size() == 3 ? a.in[2].f32() : nullptr;
  parallel_for(a.pool, T, row_grain(H * D), [&](int64_t t0, int64_t t1, int thread) {
    float* cs =
        reinterpret_cast<float*>(a.scratch) + static_cast<size_t>(thread) * static_cast<size_t>(r.n_rot);
    float* sn = cs + half;
    for (int64_t t = t0; t < t1; ++t) {
      const auto pos = static_cast<float>(a.in[1].i32()[t]);
      for (int64_t i = 0; i < half; ++i) {
        const float freq = factors != nullptr ? a.prepared[i] / factors[i] : a.prepared[i];
        const float theta = pos * freq;
        cs[i] = std::cos(theta);
        sn[i] = std::sin(theta);
      }
      for (int64_t h = 0; h < H; ++h) {
        const float* xi = x.f32() + (t * H + h) * D;
        float* o = a.out.f32() + (t * H + h) * D;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i0 = normal ? 2 * i : i, i1 = normal ? 2 * i + 1 : i + half;
          const float x0 = xi[i0], x1 = xi[i1];
          o[i0] = x0 * cs[i] - x1 * sn[i];
          o[i1] = x0 * sn[i] + x1 * cs[i];
        }
        if (o != xi)
          for (int64_t d = r.n_rot; d < D; ++d) o[d] = xi[d];
      }
    }
  });
  return {};
}

namespace {
Status check_token_ids(const KernelArgs& a, int64_t V) {
  const int64_t T = a.in[1].dim(0);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t id = a.in[1].i32()[t];
    if (id < 0 || id >= V)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("cpu: embedding '{}': token id {} outside the vocabulary [0, {})", a.node.name, id, V));
  }
  return {};
}

size_t row_scratch_stride(size_t row_bytes) { return (row_bytes + 63) / 64 * 64; }
}  // namespace

Status embedding(const KernelArgs& a) {
  const TensorView& table = a.in[0];
  const int64_t V = table.dim(0), D = table.dim(1), T = a.in[1].dim(0);
  const size_t row_bytes = *graph::dtype_bytes(table.dtype, static_cast<uint64_t>(D));
  if (Status s = check_token_ids(a, V); !s) return s;
  parallel_for(a.pool, T, row_grain(D), [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) {
      const std::byte* row = table.bytes() + static_cast<size_t>(a.in[1].i32()[t]) * row_bytes;
      (void)formats::dequantize_row(table.dtype, row, a.out.f32() + t * D, D);  // types checked at compile
    }
  });
  return {};
}

// The file's pages of such a table were dropped once repacked (WeightCopied): a lookup there would
// fault a page back in per token (SmolLM2: 64 us per token, against 3 us from the copy).
Status embedding_repacked(const KernelArgs& a) {
  const TensorView& table = a.in[0];
  const int64_t V = table.dim(0), D = table.dim(1), T = a.in[1].dim(0);
  const size_t stride = row_scratch_stride(*graph::dtype_bytes(table.dtype, static_cast<uint64_t>(D)));
  const auto& mk = data_of<MatmulKernel>(a.data);
  if (Status s = check_token_ids(a, V); !s) return s;
  parallel_for(a.pool, T, row_grain(D), [&](int64_t t0, int64_t t1, int thread) {
    std::byte* row = a.scratch + static_cast<size_t>(thread) * stride;
    for (int64_t t = t0; t < t1; ++t) {
      mk.unpack_row(table.bytes(), V, D, a.in[1].i32()[t], row);
      (void)formats::dequantize_row(table.dtype, row, a.out.f32() + t * D, D);  // types checked at compile
    }
  });
  return {};
}

size_t embedding_repacked_scratch(size_t row_bytes, int threads) {
  return static_cast<size_t>(threads) * row_scratch_stride(row_bytes);
}

}  // namespace glass::backend::cpu::kernels
