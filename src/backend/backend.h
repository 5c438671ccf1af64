#pragma once
// A backend turns a graph into a Plan: compiled once per plan key, then run once per step.
// Compilation rewrites the graph for the backend (composites it has no kernel for are decomposed),
// checks every node against the backend's kernel table and fails naming the first miss, binds
// weights, and sizes every buffer for the bucket's maximum T and S. Running binds the step inputs
// and the values of T and S, then walks a flat schedule: no shape inference, no allocation.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "glass/result.h"
#include "graph/graph.h"
#include "graph/rewrite.h"

namespace glass::backend {

// Resolves a parameter node (by its name) to its data, e.g. a pointer into a mapped GGUF file.
using WeightResolver = std::function<Result<const void*>(const graph::Node& parameter)>;

struct CompileOptions {
  graph::Bindings max;                // bucket maxima: T (tokens per step) and S (cache rows)
  bool decompose_composites = false;  // run composites through their reference decompositions
  bool fuse = true;                   // backends' fusion rewrites and fused kernels (off: for A/B)
  // Every row computed the same way whatever else its step holds, so a request's logits do not
  // depend on its batch (the cpu backend: one attention score order and no split decode; matmuls
  // without the k-quant packed path or F16/BF16 repacking). Costs speed; see docs/performance.md.
  bool batch_invariant = false;
};

// One step's data. Inputs and states follow graph.leaves(Op::Input / Op::State) order; outputs follow
// graph.outputs order and must hold the output's extents at this step's bindings.
struct StepArgs {
  graph::Bindings bind;
  std::vector<const void*> inputs;
  std::vector<void*> states;
  std::vector<float*> outputs;
};

// What one run did; sessions sum these into their counters.
// Wall time of one kind of kernel, summed over runs: label "op" or "op weight-layout" (e.g.
// "matmul_swiglu q4_0x16"); weight_bytes: the parameter bytes its matmuls read.
struct OpTime {
  uint64_t calls = 0;
  uint64_t ns = 0;
  uint64_t weight_bytes = 0;
};
using OpProfile = std::map<std::string, OpTime, std::less<>>;

struct StepStats {
  // Rows written into each state tensor (graph.leaves(Op::State) order); sized by the caller.
  std::vector<uint64_t> state_rows_written;
  // When set, backends that can time their kernels add each one's wall time here (glass bench
  // --profile); a plan that cannot leaves it as it is.
  OpProfile* profile = nullptr;
};

// Activation buffers of one plan for one user (a session): plans are immutable and shared, so
// everything a run writes lives here. Allocated once, reused by every step.
class Workspace {
 public:
  virtual ~Workspace() = default;
};

class Plan {
 public:
  virtual ~Plan() = default;
  virtual std::unique_ptr<Workspace> make_workspace() const = 0;
  virtual Status run(const StepArgs& args, Workspace& ws, StepStats& stats) const = 0;
  // The graph as compiled (after rewrites) and what the rewrites did.
  virtual const graph::Graph& compiled_graph() const = 0;
  virtual const graph::RewriteLog& rewrites() const = 0;
  virtual const graph::Bindings& max_bindings() const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // The name with what was chosen at creation (cpu: kernel tier and threads), for logs.
  virtual std::string describe() const { return std::string(name()); }
  // Whether the kernel table holds a kernel for this node (op and operand dtypes).
  virtual bool supports(const graph::Graph& g, const graph::Node& n) const = 0;
  // The kernel table, one "op(dtypes)" line per entry, for `glass ops`.
  virtual std::vector<std::string> kernel_table() const = 0;
  virtual Result<std::unique_ptr<Plan>> compile(const graph::Graph& g, const WeightResolver& weights,
                                                const CompileOptions& options) const = 0;
};

// Shared front half of every backend's compile: rewrites for the backend, then the capability check.
struct Lowered {
  graph::Graph graph;
  graph::RewriteLog log;
};
Result<Lowered> lower_for(const Backend& backend, const graph::Graph& g, const CompileOptions& options);

// Operand dtypes of a node as printed in kernel tables and errors: "matmul(f32, q4_0)".
std::string kernel_signature(const graph::Graph& g, const graph::Node& n);

// Told a weight's bytes (in parts, from any thread) once a backend holds its own copy of them (a
// repack) and its plans read the copy: the owner may drop the original's pages from memory
// (MappedFile::release) but must keep the bytes readable, since something else may still read
// them (another backend's plans, an op with no kernel for the repacked layout).
using WeightCopied = std::function<void(const void* data, size_t bytes)>;

struct BackendOptions {
  int n_threads = 0;  // compute threads for backends that use them (cpu); <= 0: one per hardware thread
  bool repack_weights = true;   // cpu: one-time repacks into faster kernel layouts (cpu/weight_repack.h)
  WeightCopied weight_copied;   // may be empty
  std::string isa;              // cpu: kernel tier by name (cpu/isa.h); empty = the best this CPU runs
  std::string decode_strategy;  // cpu: "spread" or "lockstep" (cpu/isa.h); empty = detect_decode_strategy()
};
Result<std::unique_ptr<Backend>> make_backend(std::string_view name, const BackendOptions& options = {});

}  // namespace glass::backend
