// Data movement: permute, slice, concat (reshape aliases its input and runs no kernel), gather,
// cast (dequantization included) and row writes into state.
#include <fmt/format.h>

#include <cstring>

#include "backend/ref/kernel.h"
#include "formats/quant.h"

namespace glass::backend::ref {
namespace {

std::array<int64_t, 4> strides_of(const graph::Extents& e) {
  std::array<int64_t, 4> st{};
  int64_t s = 1;
  for (int i = e.rank - 1; i >= 0; --i) {
    st[static_cast<size_t>(i)] = s;
    s *= e.dims[static_cast<size_t>(i)];
  }
  return st;
}

size_t elem_bytes(graph::DType t) { return static_cast<size_t>(graph::traits(t).block_bytes); }

// Copies the box `ext` of `src` (strides `ss`, origin `src0`) into `dst` (strides `ds`, origin `dst0`).
void copy_box(const std::byte* src, const std::array<int64_t, 4>& ss, std::byte* dst,
              const std::array<int64_t, 4>& ds, const graph::Extents& ext, size_t eb) {
  std::array<int64_t, 4> d{1, 1, 1, 1};
  std::array<int64_t, 4> s4{}, d4{};
  for (int i = 0; i < ext.rank; ++i) {
    const auto k = static_cast<size_t>(4 - ext.rank + i);
    d[k] = ext.dims[static_cast<size_t>(i)];
    s4[k] = ss[static_cast<size_t>(i)];
    d4[k] = ds[static_cast<size_t>(i)];
  }
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c)
        for (int64_t e = 0; e < d[3]; ++e) {
          const int64_t so = a * s4[0] + b * s4[1] + c * s4[2] + e * s4[3];
          const int64_t dof = a * d4[0] + b * d4[1] + c * d4[2] + e * d4[3];
          std::memcpy(dst + static_cast<size_t>(dof) * eb, src + static_cast<size_t>(so) * eb, eb);
        }
}

}  // namespace

Status load_row_f32(const TensorRef& table, int64_t row, float* dst) {
  const int64_t n = table.dim(table.ext.rank - 1);
  const auto row_bytes = static_cast<int64_t>(*graph::dtype_bytes(table.dtype, static_cast<uint64_t>(n)));
  const std::byte* src = static_cast<const std::byte*>(table.data) + row * row_bytes;
  if (table.dtype == graph::DType::I32) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(reinterpret_cast<const int32_t*>(src)[i]);
    return {};
  }
  return formats::dequantize_row(table.dtype, src, dst, n);
}

Status copy_layout(const KernelArgs& a) {
  const TensorRef& x = a.in[0];
  const size_t eb = elem_bytes(x.dtype);
  const auto xs = strides_of(x.ext);
  const auto os = strides_of(a.out.ext);
  auto* src = static_cast<const std::byte*>(x.data);
  auto* dst = static_cast<std::byte*>(a.out.data);
  switch (a.node.op) {
    case graph::Op::Permute: {
      const auto& perm = std::get<graph::PermuteAttrs>(a.node.attrs).perm;
      std::array<int64_t, 4> ss{};
      for (size_t i = 0; i < perm.size(); ++i) ss[i] = xs[static_cast<size_t>(perm[i])];
      copy_box(src, ss, dst, os, a.out.ext, eb);
      return {};
    }
    case graph::Op::Slice: {
      const auto& s = std::get<graph::SliceAttrs>(a.node.attrs);
      if (s.start + a.out.dim(s.axis) > x.dim(s.axis))
        return make_error(ErrorCode::CapacityExceeded,
                          fmt::format("ref: slice '{}' reads rows [{}, {}) of {}", a.node.name, s.start,
                                      s.start + a.out.dim(s.axis), x.dim(s.axis)));
      copy_box(src + static_cast<size_t>(s.start * xs[static_cast<size_t>(s.axis)]) * eb, xs, dst, os,
               a.out.ext, eb);
      return {};
    }
    case graph::Op::Concat: {
      const int axis = std::get<graph::ConcatAttrs>(a.node.attrs).axis;
      copy_box(src, xs, dst, os, x.ext, eb);
      const TensorRef& y = a.in[1];
      copy_box(static_cast<const std::byte*>(y.data), strides_of(y.ext),
               dst + static_cast<size_t>(x.dim(axis) * os[static_cast<size_t>(axis)]) * eb, os, y.ext, eb);
      return {};
    }
    default:
      return make_error(ErrorCode::Internal, "ref: copy_layout on a non-layout op");
  }
}

Status gather(const KernelArgs& a) {
  const TensorRef& table = a.in[0];
  const int64_t rows = table.dim(0);
  const auto row_bytes =
      static_cast<size_t>(*graph::dtype_bytes(table.dtype, static_cast<uint64_t>(table.dim(1))));
  for (int64_t t = 0; t < a.in[1].dim(0); ++t) {
    const int32_t id = a.in[1].i32()[t];
    if (id < 0 || id >= rows)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("ref: {} '{}': id {} outside [0, {})", graph::op_name(a.node.op),
                                    a.node.name, id, rows));
    std::memcpy(static_cast<std::byte*>(a.out.data) + static_cast<size_t>(t) * row_bytes,
                static_cast<const std::byte*>(table.data) + static_cast<size_t>(id) * row_bytes, row_bytes);
  }
  return {};
}

Status cast(const KernelArgs& a) {
  const TensorRef& x = a.in[0];
  const int64_t n = x.ext.rank ? x.dim(x.ext.rank - 1) : 1;
  const int64_t rows = x.ext.numel() / n;
  if (a.out.dtype == graph::DType::F32) {
    for (int64_t r = 0; r < rows; ++r)
      if (auto st = load_row_f32(x, r, a.out.f32() + r * n); !st) return st;
    return {};
  }
  const int64_t total = x.ext.numel();
  auto* dst = static_cast<uint16_t*>(a.out.data);
  if (x.dtype == a.out.dtype) {
    std::memcpy(dst, x.data, static_cast<size_t>(total) * 2);
    return {};
  }
  for (int64_t i = 0; i < total; ++i)
    dst[i] =
        a.out.dtype == graph::DType::F16 ? formats::f32_to_f16(x.f32()[i]) : formats::f32_to_bf16(x.f32()[i]);
  return {};
}

Status gather_blocks(const KernelArgs& a) {
  const auto& attrs = std::get<graph::BlockGatherAttrs>(a.node.attrs);
  const TensorRef& cache = a.in[0];
  const TensorRef& table = a.in[1];
  const int64_t C = cache.dim(0), N = table.dim(0), MB = table.dim(1), B = attrs.block_size;
  const int64_t T = a.out.dim(0), len = a.out.dim(1);
  const auto row_bytes = static_cast<size_t>(cache.ext.numel() / C) * elem_bytes(cache.dtype);
  auto* out = static_cast<std::byte*>(a.out.data);
  for (int64_t t = 0; t < T; ++t) {
    const int32_t seq = a.in[2].i32()[t];
    for (int64_t j = 0; j < len; ++j, out += row_bytes) {
      const int64_t block = seq >= 0 && seq < N && j / B < MB ? table.i32()[seq * MB + j / B] : -1;
      if (block < 0 || (block + 1) * B > C) {  // past the sequence's blocks: never visible, zeros
        std::memset(out, 0, row_bytes);
        continue;
      }
      std::memcpy(
          out, static_cast<const std::byte*>(cache.data) + static_cast<size_t>(block * B + j % B) * row_bytes,
          row_bytes);
    }
  }
  return {};
}

Status write_rows(const KernelArgs& a) {
  const TensorRef& state = a.in[0];
  const TensorRef& rows = a.in[1];
  const int64_t capacity = state.dim(0);
  const int64_t row_elems = state.ext.numel() / capacity;
  const size_t eb = elem_bytes(state.dtype);
  if (a.out.data != state.data)
    std::memcpy(a.out.data, state.data, static_cast<size_t>(state.ext.numel()) * eb);
  for (int64_t t = 0; t < rows.dim(0); ++t) {
    const int32_t slot = a.in[2].i32()[t];
    if (slot < 0 || slot >= capacity)
      return make_error(ErrorCode::CapacityExceeded,
                        fmt::format("ref: {} '{}': slot {} outside the state's {} rows",
                                    graph::op_name(a.node.op), a.node.name, slot, capacity));
    std::byte* dst = static_cast<std::byte*>(a.out.data) + static_cast<size_t>(slot * row_elems) * eb;
    if (rows.dtype == state.dtype) {
      std::memcpy(dst, static_cast<const std::byte*>(rows.data) + static_cast<size_t>(t * row_elems) * eb,
                  static_cast<size_t>(row_elems) * eb);
    } else {  // kv_write into an f16 cache
      for (int64_t i = 0; i < row_elems; ++i)
        reinterpret_cast<uint16_t*>(dst)[i] = formats::f32_to_f16(rows.f32()[t * row_elems + i]);
    }
  }
  if (a.rows_written != nullptr) *a.rows_written += static_cast<uint64_t>(rows.dim(0));
  return {};
}

}  // namespace glass::backend::ref
