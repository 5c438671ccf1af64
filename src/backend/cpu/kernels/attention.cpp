// The attention kernel's work split: one job per (kv head, block of query rows), each streaming
// over the cache with the ISA's attention routine (attention_impl.h) and per-thread scratch.
#include <fmt/format.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vec_ops.h"

namespace glass::backend::cpu::kernels {

namespace {
constexpr int64_t kKeyBlockFloats = 64;  // attention_impl.h's kKeyBlock
constexpr int64_t kRowBlockMax = 4;      // attention_impl.h's kRowBlockMax
}  // namespace

int64_t attention_rows_per_job(int64_t group) { return group >= 64 ? 1 : 64 / group; }

int64_t attention_scratch_floats(int64_t group, int64_t D) {
  const int64_t R = attention_rows_per_job(group) * group;
  return R * D + 2 * R + kRowBlockMax * kKeyBlockFloats + attention_block_floats(D) + 16;
}

namespace {
// The shared packed blocks of a multi-job step: every block of every kv head, [0, S).
int64_t packed_floats(int64_t Hkv, int64_t D, int64_t S) {
  return Hkv * ((S + kKeyBlockFloats - 1) / kKeyBlockFloats) * attention_block_floats(D);
}
}  // namespace

size_t attention_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                         const void*) {
  const graph::Shape& q = g.node(n.inputs[0]).shape;
  const graph::Shape& k = g.node(n.inputs[1]).shape;
  const int64_t group = q[1].value / k[1].value, D = q[2].value;
  const int64_t S = graph::resolve(std::get<graph::AttentionAttrs>(n.attrs).kv_len, max);
  const int64_t T = graph::resolve(q[0], max);
  const int64_t shared = T > attention_rows_per_job(group) ? packed_floats(k[1].value, D, S) : 0;
  return (static_cast<size_t>(threads) * static_cast<size_t>(attention_scratch_floats(group, D)) +
          static_cast<size_t>(shared)) *
         sizeof(float);
}

Status attention(const KernelArgs& a) {
  const auto& attrs = std::get<graph::AttentionAttrs>(a.node.attrs);
  const TensorView& q = a.in[0];
  const TensorView& kc = a.in[1];
  const int64_t T = q.dim(0), H = q.dim(1), D = q.dim(2), C = kc.dim(0), Hkv = kc.dim(1);
  const int64_t S = graph::resolve(attrs.kv_len, a.bind);
  if (S > C || S <= 0)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("cpu: attention '{}' reads {} rows of a {}-row cache", a.node.name, S, C));
  const bool by_seq = a.node.inputs.size() == 7;
  const AttentionJob job0{q.f32(),
                          kc.data,
                          a.in[2].data,
                          kc.dtype == graph::DType::F16,
                          a.in[3].i32(),
                          a.in[4].i32(),
                          by_seq ? a.in[5].i32() : nullptr,
                          by_seq ? a.in[6].i32() : nullptr,
                          a.out.f32(),
                          H,
                          Hkv,
                          D,
                          S,
                          attrs.scale,
                          attrs.window,
                          attrs.softcap};
  const int64_t group = H / Hkv, rows = attention_rows_per_job(group);
  const int64_t blocks = (T + rows - 1) / rows;
  const auto per_thread = static_cast<size_t>(attention_scratch_floats(group, D));
  const auto& ops = *static_cast<const VecOps*>(a.data);
  float* threads_scratch = reinterpret_cast<float*>(a.scratch);
  AttentionJob job = job0;
  if (blocks > 1) {  // several jobs per kv head: pack each key block once for all of them
    float* packed = threads_scratch + static_cast<size_t>(a.pool.size()) * per_thread;
    const int64_t kb = (S + kKeyBlockFloats - 1) / kKeyBlockFloats, block = attention_block_floats(D);
    parallel_for(a.pool, Hkv * kb, 4, [&](int64_t b0, int64_t b1, int) {
      for (int64_t b = b0; b < b1; ++b)
        ops.attention_pack(job0, b / kb, (b % kb) * kKeyBlockFloats, packed + b * block);
    });
    job.packed = packed;
  }
  // Latest query blocks first: under a causal mask they read the most keys, and handing them out
  // first lets the cheap early blocks fill the gaps at the end instead of the costly ones.
  const int64_t jobs = Hkv * blocks;
  parallel_for(a.pool, jobs, 1, [&](int64_t j0, int64_t j1, int thread) {
    float* scratch = threads_scratch + static_cast<size_t>(thread) * per_thread;
    for (int64_t i = j0; i < j1; ++i) {
      const int64_t j = jobs - 1 - i, hk = j % Hkv, t0 = (j / Hkv) * rows;
      ops.attention(job, hk, t0, std::min(T, t0 + rows), scratch);
    }
  });
  return {};
}

}  // namespace glass::backend::cpu::kernels
