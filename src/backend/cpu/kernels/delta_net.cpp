// delta_net and delta_net_state (graph/ops/delta_net.cpp) on the cpu backend: the step's tokens
// split into runs of one sequence; each (run, value head) is a task, run on one thread through its
// tokens with the head's D x D state held where the task works on it (a per-thread copy for
// delta_net, the slot itself for delta_net_state). Per token the tier's delta_rule (vec_ops.h):
// each row of the state decayed, read against k, corrected and read against q while it sits in L1.
// When a delta_net_state only repeats its delta_net's recurrence to keep the states, the plan runs
// delta_net_writing_states instead, which writes them in place as it goes, and the state node runs
// nothing (cpu_plan.cpp): one recurrence per step, not two.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vec_ops.h"
#include "backend/state_runs.h"

namespace glass::backend::cpu::kernels {
namespace {

size_t runs_bytes(int64_t tokens) { return (static_cast<size_t>(tokens) * sizeof(StateRun) + 63) / 64 * 64; }

}  // namespace

size_t delta_net_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                         const KernelData&) {
  const graph::Shape& v = g.node(n.inputs[2]).shape;
  const int64_t D = v[2].value;
  return runs_bytes(graph::resolve(v[0], max)) +
         static_cast<size_t>(threads) * static_cast<size_t>(D * D) * 4;
}

namespace {

// out: the outputs (delta_net); write: the states after the step into their slots (delta_net_state,
// or delta_net fused with it).
Status run(const KernelArgs& a, bool out, bool write) {
  const auto& ops = data_of<VecOps>(a.data);
  const bool out_op = a.node.op == graph::Op::DeltaNet;
  const float* k = a.in[1].f32();
  const float* v = a.in[2].f32();
  const float* g = a.in[3].f32();
  const float* beta = a.in[4].f32();
  const TensorView& pool = out_op ? a.in[5] : a.out;
  const float* q = out_op ? a.in[0].f32() : nullptr;
  const int32_t* q_seq = (out_op ? a.in[6] : a.in[5]).i32();
  const TensorView& slots = out_op ? a.in[7] : a.in[6];
  const int64_t T = a.in[2].dim(0), Hv = a.in[2].dim(1), D = a.in[2].dim(2), Hk = a.in[1].dim(1);
  const int64_t R = pool.dim(0), N = slots.dim(0);
  auto* runs = reinterpret_cast<StateRun*>(a.scratch);
  float* work = reinterpret_cast<float*>(a.scratch + runs_bytes(T));
  int64_t n_runs = 0;
  if (Status st = for_each_state_run(q_seq, T, slots.i32(), N, R, a.node, "",
                                     [&](const StateRun& run) -> Status {
                                       runs[n_runs++] = run;
                                       return {};
                                     });
      !st)
    return st;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool grouped = std::get<graph::DeltaNetAttrs>(a.node.attrs).grouped_heads;
  auto key_head = [&](int64_t h) { return grouped ? h / (Hv / Hk) : h % Hk; };
  parallel_for(a.pool, n_runs * Hv, 1, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t task = begin; task < end; ++task) {
      const StateRun& run = runs[task / Hv];
      const int64_t h = task % Hv;
      float* slot = pool.f32() + (run.slot * Hv + h) * D * D;  // m[j * D + i] = S[i][j]
      // Written in place when the states are this kernel's to write; else worked on in a copy.
      float* m = slot;
      if (!write) {
        m = work + static_cast<size_t>(thread) * static_cast<size_t>(D * D);
        std::memcpy(m, slot, static_cast<size_t>(D * D) * sizeof(float));
      }
      for (int64_t t = run.first; t < run.end; ++t)
        ops.delta_rule(m, k + (t * Hk + key_head(h)) * D, out ? q + (t * Hk + key_head(h)) * D : nullptr,
                       v + (t * Hv + h) * D, std::exp(g[t * Hv + h]), beta[t * Hv + h],
                       out ? a.out.f32() + (t * Hv + h) * D : nullptr, D, scale);
    }
  });
  return {};
}

}  // namespace

Status delta_net(const KernelArgs& a) {
  const bool out_op = a.node.op == graph::Op::DeltaNet;
  return run(a, out_op, !out_op);
}

Status delta_net_writing_states(const KernelArgs& a) { return run(a, true, true); }

}  // namespace glass::backend::cpu::kernels
