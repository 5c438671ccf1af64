#pragma once
// The cpu backend's kernel interface. A plan is a flat schedule of kernel calls; each call gets its
// tensors with extents resolved for the step, the backend's thread pool (kernels split work only
// through parallel_for), scratch memory sized at compile time, and the table entry's data (e.g.
// the dot-product routines of a matmul's weight type at the chosen ISA). The table that maps a
// node to its kernel is kernel_table.h.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/thread_pool.h"
#include "graph/graph.h"

namespace glass::backend::cpu {

namespace kernels {
struct VecOps;
struct MatmulKernel;
struct FusedMatmulKernel;
struct MoeKernel;
struct RefKernel;
}  // namespace kernels

// What a table entry hands its kernel beside the tensors: the tier's routines for the node (a row
// of the matmul table, its fused entry, the tier's vector ops, ...), or nothing.
using KernelData =
    std::variant<std::monostate, const kernels::VecOps*, const kernels::MatmulKernel*,
                 const kernels::FusedMatmulKernel*, const kernels::MoeKernel*, const kernels::RefKernel*>;
// The entry's data as the kernel expects it; a mismatch is a table defect.
template <class T>
const T& data_of(const KernelData& d) {
  const T* const* p = std::get_if<const T*>(&d);
  GLASS_CHECK(p != nullptr && *p != nullptr);
  return **p;
}

struct TensorView {
  void* data = nullptr;
  graph::Extents ext;
  graph::DType dtype = graph::DType::F32;

  float* f32() const { return static_cast<float*>(data); }
  int32_t* i32() const { return static_cast<int32_t*>(data); }
  std::byte* bytes() const { return static_cast<std::byte*>(data); }
  int64_t dim(int i) const { return ext.dims[static_cast<size_t>(i)]; }
  int64_t last() const { return ext.dims[static_cast<size_t>(ext.rank - 1)]; }
  int64_t rows() const { return ext.numel() / last(); }
};

inline constexpr size_t kMaxInputs = 8;  // operands of the widest op (attention with sequence ids: 7)

struct KernelArgs {
  const graph::Node& node;
  TensorView out;
  std::array<TensorView, kMaxInputs> in;
  const graph::Bindings& bind;
  ThreadPool& pool;
  std::byte* scratch = nullptr;      // scratch_bytes() of the entry, 64-byte aligned
  uint64_t* rows_written = nullptr;  // row writes into state: the written state's counter
  KernelData data;                   // the table entry's data
  const float* prepared = nullptr;   // per-node constants computed at compile (KernelChoice::prepare)
  std::byte* converted = nullptr;    // input 0 converted (KernelChoice::convert), shared between nodes
  bool convert_now = true;           // false: an earlier node already wrote `converted` this step
  bool batch_invariant = false;      // CompileOptions::batch_invariant
};

using KernelFn = Status (*)(const KernelArgs&);

// Scratch a kernel needs for `n` at the bucket's maximum extents, `threads` workers.
using ScratchFn = size_t (*)(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                             int threads, const KernelData& data);

// Per-node constants a kernel wants computed once at compile time (e.g. rope frequencies).
using PrepareFn = std::vector<float> (*)(const graph::Node& n);

// A converted copy of input 0 a kernel works from (a matmul's activations quantized to its weight
// type's blocks): bytes at the bucket maxima, and a key naming the conversion. Nodes converting
// the same input the same way share one copy in the arena, converted by the first of them.
struct InputConversion {
  size_t bytes = 0;
  uintptr_t key = 0;
  const char* what = "";  // the converted type, for the plan's report ("q8_0")
};
using ConvertFn = InputConversion (*)(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                                      const KernelData& data);

// A node's kernel as the table chose it for a plan (kernel_table.h).
struct KernelChoice {
  KernelFn fn = nullptr;  // nullptr: the node is an alias (reshape) and runs nothing
  KernelData data;        // what the kernel runs with: for a matmul, the decode strategy's row
  // The entry's own data, which sizes the scratch and names the input conversion (for a matmul, the
  // tier's file-layout row: its activations are the ones every row of the weight type reads).
  KernelData base;
  ScratchFn scratch = nullptr;
  PrepareFn prepare = nullptr;
  ConvertFn convert = nullptr;
  bool in_place = false;  // out may share input in_place_input's buffer
  Isa isa = Isa::Scalar;
  uint8_t in_place_input = 0;
  // A matmul whose row reads its weights in a repacked layout: that layout's kernel; the plan makes
  // (or finds) the backend's copy of each weight in it. Null: the weights as the file has them.
  const kernels::MatmulKernel* repack = nullptr;
};

}  // namespace glass::backend::cpu
