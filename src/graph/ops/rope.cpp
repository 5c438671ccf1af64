// Rotary position embedding (Su et al. 2021, RoFormer). For each rotated pair (a, b) of a head and
// pair index i < n_rot/2: theta = pos * freq_scale * base^(-2i/n_rot) / factor[i], and
//   a' = a cos(theta) - b sin(theta),  b' = a sin(theta) + b cos(theta).
// Normal mode pairs (x[2i], x[2i+1]) (GGUF llama); NeoX mode pairs (x[i], x[i + n_rot/2]).
#include <fmt/format.h>

#include <cmath>

#include "graph/ops/infer.h"

namespace glass::graph {

Result<TypeInfo> infer_rope(const InferArgs& a) {
  if (a.inputs.size() != 2 && a.inputs.size() != 3)
    return node_error(a, "expects (x, positions[, freq_factors])");
  const Node& x = *a.inputs[0];
  const Node& pos = *a.inputs[1];
  const auto& r = std::get<RopeAttrs>(a.node.attrs);
  if (x.dtype != DType::F32 || x.shape.size() != 3)
    return node_error(a, "x must be f32 [T, heads, head_dim]");
  if (pos.dtype != DType::I32 || pos.shape.size() != 1 || !(pos.shape[0] == x.shape[0]))
    return node_error(a, "positions must be i32 [T] matching x");
  const Dim& hd = x.shape[2];
  if (hd.is_symbolic() || r.n_rot <= 0 || r.n_rot % 2 != 0 || r.n_rot > hd.value)
    return node_error(
        a, fmt::format("n_rot {} must be even and within head_dim {}", r.n_rot, dim_to_string(hd)));
  if (!(r.freq_base > 0.0f) || !(r.freq_scale > 0.0f))
    return node_error(a, "freq_base and freq_scale must be > 0");
  if (a.inputs.size() == 3) {
    const Node& f = *a.inputs[2];
    if (f.dtype != DType::F32 || f.shape != make_shape({r.n_rot / 2}))
      return node_error(a, fmt::format("freq_factors must be f32 [{}]", r.n_rot / 2));
  }
  return TypeInfo{x.shape, DType::F32};
}

std::vector<float> rope_inv_freq(const RopeAttrs& r) {
  std::vector<float> f(static_cast<size_t>(r.n_rot / 2));
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = static_cast<float>(
        r.freq_scale * std::pow(static_cast<double>(r.freq_base), -2.0 * static_cast<double>(i) / r.n_rot));
  return f;
}

Tensor decompose_rope(Builder& b, const Node& n, const std::vector<Tensor>& in) {
  const auto& r = std::get<RopeAttrs>(n.attrs);
  const Tensor x = in[0];
  const Dim T = x.shape()[0];
  const Dim H = x.shape()[1];
  const int64_t head_dim = x.shape()[2].value;
  const int64_t half = r.n_rot / 2;

  Tensor inv_freq = b.constant(rope_inv_freq(r), make_shape({half}));
  if (in.size() == 3) inv_freq = inv_freq / in[2];
  const Tensor pos = b.reshape(b.cast(in[1], DType::F32), Shape{T, Dim::constant(1)});
  const Tensor theta = pos * b.reshape(inv_freq, make_shape({1, half}));  // [T, half]

  const Tensor xr = r.n_rot < head_dim ? b.slice(x, 2, 0, Dim::constant(r.n_rot)) : x;
  Tensor rotated;
  if (r.mode == RopeMode::Normal) {
    const Shape pairs{T, H, Dim::constant(half), Dim::constant(2)};
    const Shape trig{T, Dim::constant(1), Dim::constant(half), Dim::constant(1)};
    const Tensor c = b.reshape(b.cos(theta), trig);
    const Tensor s = b.reshape(b.sin(theta), trig);
    const Tensor xp = b.reshape(xr, pairs);
    const Tensor x0 = b.slice(xp, 3, 0, Dim::constant(1));
    const Tensor x1 = b.slice(xp, 3, 1, Dim::constant(1));
    rotated = b.reshape(b.concat(x0 * c - x1 * s, x0 * s + x1 * c, 3), Shape{T, H, Dim::constant(r.n_rot)});
  } else {
    const Shape trig{T, Dim::constant(1), Dim::constant(half)};
    const Tensor c = b.reshape(b.cos(theta), trig);
    const Tensor s = b.reshape(b.sin(theta), trig);
    const Tensor x0 = b.slice(xr, 2, 0, Dim::constant(half));
    const Tensor x1 = b.slice(xr, 2, half, Dim::constant(half));
    rotated = b.concat(x0 * c - x1 * s, x0 * s + x1 * c, 2);
  }
  if (r.n_rot == head_dim) return rotated;
  return b.concat(rotated, b.slice(x, 2, r.n_rot, Dim::constant(head_dim - r.n_rot)), 2);
}

}  // namespace glass::graph
