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

namespace glass::backend::cpu::kernels {
namespace {

struct Run {
  int64_t first, end;  // tokens [first, end) of one sequence
  int32_t slot;
};

size_t runs_bytes(int64_t tokens) { return (static_cast<size_t>(tokens) * sizeof(Run) + 63) / 64 * 64; }

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
  auto* runs = reinterpret_cast<Run*>(a.scratch);
  float* work = reinterpret_cast<float*>(a.scratch + runs_bytes(T));
  int64_t n_runs = 0;
  for (int64_t t0 = 0; t0 < T;) {
    const int32_t seq = q_seq[t0];
    int64_t t1 = t0 + 1;
    while (t1 < T && q_seq[t1] == seq) ++t1;
    if (seq < 0 || seq >= N || slots.i32()[seq] < 0 || slots.i32()[seq] >= R)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("{} '{}': token {} of sequence {} has no state slot among the {} sequences and "
                      "{} slots",
                      graph::op_name(a.node.op), a.node.name, t0, seq, N, R));
    for (int64_t r = 0; r < n_runs; ++r)
      if (q_seq[runs[r].first] == seq)
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("{} '{}': sequence {}'s tokens are not consecutive in the step",
                                      graph::op_name(a.node.op), a.node.name, seq));
    runs[n_runs++] = Run{t0, t1, slots.i32()[seq]};
    t0 = t1;
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool grouped = std::get<graph::DeltaNetAttrs>(a.node.attrs).grouped_heads;
  auto key_head = [&](int64_t h) { return grouped ? h / (Hv / Hk) : h % Hk; };
  parallel_for(a.pool, n_runs * Hv, 1, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t task = begin; task < end; ++task) {
      const Run& run = runs[task / Hv];
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
