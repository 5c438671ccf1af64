#pragma once
// The reference backend's kernel interface: plain f32 loops over contiguous row-major tensors.
// Kernels see resolved extents; step-dependent values (ids, slots, positions) are still checked.
#include <array>
#include <cstddef>

#include "backend/backend.h"
#include "graph/graph.h"

namespace glass::backend::ref {

struct TensorRef {
  void* data = nullptr;
  graph::Extents ext;
  graph::DType dtype = graph::DType::F32;

  float* f32() const { return static_cast<float*>(data); }
  int32_t* i32() const { return static_cast<int32_t*>(data); }
  int64_t dim(int i) const { return ext.dims[static_cast<size_t>(i)]; }
};

struct KernelArgs {
  const graph::Node& node;
  TensorRef out;
  std::array<TensorRef, 8> in;
  const graph::Bindings* bind = nullptr;
  float* scratch = nullptr;          // at least scratch_floats(node, max extents) floats
  uint64_t* rows_written = nullptr;  // the written state's counter, for row writes
};

using KernelFn = Status (*)(const KernelArgs&);

// Finds the kernel for a node's op and operand dtypes, or nullptr.
KernelFn find_kernel(const graph::Graph& g, const graph::Node& n);
std::vector<std::string> kernel_table_lines();

// Kernels, one family per file.
Status elementwise(const KernelArgs& a);
Status reduce(const KernelArgs& a);
Status matmul(const KernelArgs& a);
Status copy_layout(const KernelArgs& a);  // reshape (alias), permute, slice, concat
Status gather(const KernelArgs& a);
Status cast(const KernelArgs& a);
Status write_rows(const KernelArgs& a);  // scatter_rows and kv_write
Status gather_blocks(const KernelArgs& a);
Status rms_norm(const KernelArgs& a);
Status rope(const KernelArgs& a);
Status attention(const KernelArgs& a);
Status activation(const KernelArgs& a);  // silu, swiglu, gelu, geglu, softcap
Status embedding(const KernelArgs& a);
Status moe(const KernelArgs& a);
Status short_conv(const KernelArgs& a);
Status delta_net(const KernelArgs& a);  // delta_net and delta_net_state
size_t moe_scratch_floats(int64_t dim, int64_t ffn, int n_used);

// Row i of a table of any storage dtype, as f32.
Status load_row_f32(const TensorRef& table, int64_t row, float* dst);

}  // namespace glass::backend::ref
