// Elementwise ops and last-axis reductions with numpy broadcasting, one output element at a time.
#include <cmath>
#include <limits>

#include "backend/ref/kernel.h"

namespace glass::backend::ref {
namespace {

// Strides (in elements) of `in` viewed with the output's rank padded to 4 dims; broadcast dims get 0.
std::array<int64_t, 4> broadcast_strides(const graph::Extents& in, const graph::Extents& out) {
  std::array<int64_t, 4> st{};
  int64_t stride = 1;
  for (int i = in.rank - 1; i >= 0; --i) {
    const int oi = 4 - (in.rank - i);
    st[static_cast<size_t>(oi)] =
        in.dims[static_cast<size_t>(i)] == 1 && out.dims[static_cast<size_t>(out.rank - (in.rank - i))] != 1
            ? 0
            : stride;
    stride *= in.dims[static_cast<size_t>(i)];
  }
  return st;
}

std::array<int64_t, 4> padded(const graph::Extents& e) {
  std::array<int64_t, 4> d{1, 1, 1, 1};
  for (int i = 0; i < e.rank; ++i) d[static_cast<size_t>(4 - e.rank + i)] = e.dims[static_cast<size_t>(i)];
  return d;
}

float apply(graph::Op op, float x, float y, float z) {
  switch (op) {
    case graph::Op::Add:
      return x + y;
    case graph::Op::Sub:
      return x - y;
    case graph::Op::Mul:
      return x * y;
    case graph::Op::Div:
      return x / y;
    case graph::Op::LessEqual:
      return x <= y ? 1.0f : 0.0f;
    case graph::Op::Where:
      return x != 0.0f ? y : z;
    case graph::Op::Neg:
      return -x;
    case graph::Op::Exp:
      return std::exp(x);
    case graph::Op::Sqrt:
      return std::sqrt(x);
    case graph::Op::Recip:
      return 1.0f / x;
    case graph::Op::Sin:
      return std::sin(x);
    case graph::Op::Cos:
      return std::cos(x);
    case graph::Op::Tanh:
      return std::tanh(x);
    case graph::Op::Log1p:
      return std::log1p(x);
    default:
      return std::numeric_limits<float>::quiet_NaN();
  }
}

}  // namespace

Status elementwise(const KernelArgs& a) {
  const size_t n_in = a.node.inputs.size();
  const auto d = padded(a.out.ext);
  std::array<std::array<int64_t, 4>, 3> st{};
  for (size_t k = 0; k < n_in; ++k) st[k] = broadcast_strides(a.in[k].ext, a.out.ext);
  float* out = a.out.f32();
  int64_t o = 0;
  for (int64_t i0 = 0; i0 < d[0]; ++i0)
    for (int64_t i1 = 0; i1 < d[1]; ++i1)
      for (int64_t i2 = 0; i2 < d[2]; ++i2)
        for (int64_t i3 = 0; i3 < d[3]; ++i3) {
          std::array<float, 3> v{};
          for (size_t k = 0; k < n_in; ++k)
            v[k] = a.in[k].f32()[i0 * st[k][0] + i1 * st[k][1] + i2 * st[k][2] + i3 * st[k][3]];
          out[o++] = apply(a.node.op, v[0], v[1], v[2]);
        }
  return {};
}

Status reduce(const KernelArgs& a) {
  const int64_t n = a.in[0].dim(a.in[0].ext.rank - 1);
  const int64_t rows = a.in[0].ext.numel() / n;
  const float* x = a.in[0].f32();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    if (a.node.op == graph::Op::ReduceSum) {
      double s = 0.0;
      for (int64_t i = 0; i < n; ++i) s += row[i];
      a.out.f32()[r] = static_cast<float>(s);
    } else {
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t i = 0; i < n; ++i) m = std::max(m, row[i]);
      a.out.f32()[r] = m;
    }
  }
  return {};
}

}  // namespace glass::backend::ref
