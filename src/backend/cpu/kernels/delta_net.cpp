// delta_net and delta_net_state (graph/ops/delta_net.cpp) on the cpu backend: the step's tokens
// split into runs of one sequence; each (run, value head) is a task, run on one thread through its
// tokens with the head's D x D state held where the task works on it (a per-thread copy for
// delta_net, the slot itself for delta_net_state). Per token one pass over the state's rows: a row
// j is decayed, read against k (the delta rule's prediction of v_j), corrected, and read against q,
// while it sits in L1. Every row is independent of the others, so this is the reference's
// arithmetic reordered across rows only.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/kernels.h"

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

Status delta_net(const KernelArgs& a) {
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
  parallel_for(a.pool, n_runs * Hv, 1, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t task = begin; task < end; ++task) {
      const Run& run = runs[task / Hv];
      const int64_t h = task % Hv;
      float* m = pool.f32() + (run.slot * Hv + h) * D * D;  // m[j * D + i] = S[i][j]
      if (out_op) {
        float* copy = work + static_cast<size_t>(thread) * static_cast<size_t>(D * D);
        std::memcpy(copy, m, static_cast<size_t>(D * D) * sizeof(float));
        m = copy;
      }
      for (int64_t t = run.first; t < run.end; ++t) {
        const float* kt = k + (t * Hk + h % Hk) * D;
        const float* vt = v + (t * Hv + h) * D;
        const float decay = std::exp(g[t * Hv + h]), b = beta[t * Hv + h];
        float* o = out_op ? a.out.f32() + (t * Hv + h) * D : nullptr;
        const float* qt = out_op ? q + (t * Hk + h % Hk) * D : nullptr;
        for (int64_t j = 0; j < D; ++j) {
          float* row = m + j * D;
          float sk = 0.0f;
          for (int64_t i = 0; i < D; ++i) {
            row[i] *= decay;
            sk += row[i] * kt[i];
          }
          const float delta = (vt[j] - sk) * b;
          for (int64_t i = 0; i < D; ++i) row[i] += delta * kt[i];
          if (o == nullptr) continue;
          float dot = 0.0f;
          for (int64_t i = 0; i < D; ++i) dot += row[i] * qt[i];
          o[j] = dot * scale;
        }
      }
    }
  });
  return {};
}

}  // namespace glass::backend::cpu::kernels
