// delta_net and delta_net_state (graph/ops/delta_net.cpp) as the definition reads: the tokens in
// step order, a sequence's run of tokens through its state, head by head: decay, the delta rule's
// write, the read. delta_net works on a copy of the state in scratch; delta_net_state on the slot
// itself (its output is the state pool, in place).
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backend/ref/kernel.h"
#include "backend/state_runs.h"

namespace glass::backend::ref {

Status delta_net(const KernelArgs& a) {
  const bool out_op = a.node.op == graph::Op::DeltaNet;
  const TensorRef& k = a.in[1];
  const TensorRef& v = a.in[2];
  const TensorRef& g = a.in[3];
  const TensorRef& beta = a.in[4];
  const TensorRef& pool = out_op ? a.in[5] : a.out;
  const TensorRef& q = out_op ? a.in[0] : a.in[1];  // delta_net_state computes no output
  const int32_t* q_seq = (out_op ? a.in[6] : a.in[5]).i32();
  const TensorRef& slots = out_op ? a.in[7] : a.in[6];
  const int64_t T = v.dim(0), Hv = v.dim(1), D = v.dim(2), Hk = k.dim(1), R = pool.dim(0);
  const int64_t N = slots.dim(0), per_slot = Hv * D * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool grouped = std::get<graph::DeltaNetAttrs>(a.node.attrs).grouped_heads;
  auto key_head = [&](int64_t h) { return grouped ? h / (Hv / Hk) : h % Hk; };
  return for_each_state_run(q_seq, T, slots.i32(), N, R, a.node, "ref: ", [&](const StateRun& run) -> Status {
    const int64_t t0 = run.first, t1 = run.end;
    float* state = pool.f32() + run.slot * per_slot;
    if (out_op) {
      std::memcpy(a.scratch, state, static_cast<size_t>(per_slot) * sizeof(float));
      state = a.scratch;
    }
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t h = 0; h < Hv; ++h) {
        float* m = state + h * D * D;  // m[j * D + i] = S[i][j]
        const float* kt = k.f32() + (t * Hk + key_head(h)) * D;
        const float* qt = q.f32() + (t * Hk + key_head(h)) * D;
        const float* vt = v.f32() + (t * Hv + h) * D;
        const float decay = std::exp(g.f32()[t * Hv + h]), b = beta.f32()[t * Hv + h];
        for (int64_t e = 0; e < D * D; ++e) m[e] *= decay;
        for (int64_t j = 0; j < D; ++j) {
          float sk = 0.0f;
          for (int64_t i = 0; i < D; ++i) sk += m[j * D + i] * kt[i];
          const float delta = (vt[j] - sk) * b;
          for (int64_t i = 0; i < D; ++i) m[j * D + i] += delta * kt[i];
        }
        if (!out_op) continue;
        for (int64_t j = 0; j < D; ++j) {
          float o = 0.0f;
          for (int64_t i = 0; i < D; ++i) o += m[j * D + i] * qt[i];
          a.out.f32()[(t * Hv + h) * D + j] = o * scale;
        }
      }
    return {};
  });
}

}  // namespace glass::backend::ref
