#pragma once
// The cpu backend's kernel interface. A plan is a flat schedule of kernel calls; each call gets its
// tensors with extents resolved for the step, the backend's thread pool (kernels split work only
// through parallel_for), scratch memory sized at compile time, and the table entry's data (e.g.
// the dot-product routines of a matmul's weight type at the chosen ISA).
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/thread_pool.h"
#include "graph/graph.h"

namespace glass::backend::cpu {

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
  const void* data = nullptr;        // the table entry's data
  const float* prepared = nullptr;   // per-node constants computed at compile (KernelChoice::prepare)
  std::byte* converted = nullptr;    // input 0 converted (KernelChoice::convert), shared between nodes
  bool convert_now = true;           // false: an earlier node already wrote `converted` this step
  bool batch_invariant = false;      // CompileOptions::batch_invariant
};

using KernelFn = Status (*)(const KernelArgs&);

// Scratch a kernel needs for `n` at the bucket's maximum extents, `threads` workers.
using ScratchFn = size_t (*)(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max,
                             int threads, const void* data);

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
                                      const void* data);

struct KernelChoice {
  KernelFn fn = nullptr;  // nullptr: the node is an alias (reshape) and runs nothing
  const void* data = nullptr;
  ScratchFn scratch = nullptr;
  PrepareFn prepare = nullptr;
  ConvertFn convert = nullptr;
  bool in_place = false;  // out may share input in_place_input's buffer
  Isa isa = Isa::Scalar;
  uint8_t in_place_input = 0;
};

// The best entry for the node's op and operand dtypes at an ISA no higher than `max_isa`.
std::optional<KernelChoice> find_kernel(const graph::Graph& g, const graph::Node& n, Isa max_isa);
// Whether an entry exists for the op and operand dtypes (a node not built yet: fusion rewrites).
bool has_kernel(graph::Op op, const std::vector<graph::DType>& operands, Isa max_isa);
// One "op(dtypes) isa" line per entry, for `glass ops`.
std::vector<std::string> kernel_table_lines();

}  // namespace glass::backend::cpu
