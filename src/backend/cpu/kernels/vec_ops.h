#pragma once
// Row-level compute routines of the non-matmul kernels, one set per ISA (vec_ops_<isa>.cpp compile
// the same source, vec_ops_impl.h and attention_impl.h, with that ISA's flags). The kernel
// functions in row_kernels.cpp and attention.cpp split work over the thread pool and call these;
// the kernel table passes the chosen ISA's set as the entry's data.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/isa.h"

namespace glass::backend::cpu::kernels {

// One attention work item: query rows [t0, t1) of the heads that share kv head `hk`, all of one
// sequence, whose key at position s lies at cache row blocks[s / block_size] * block_size +
// s % block_size (the sequence's row of the block table).
struct AttentionJob {
  const float* q;  // [T, H, D]
  const void* k;   // cache [C, Hkv, D], f32 or f16
  const void* v;
  bool f16_cache;
  const int32_t* q_pos;   // [T]
  const int32_t* blocks;  // the sequence's block ids, one per block_size positions
  int64_t block_size;
  float* out;            // [T, H, D]
  int64_t H, Hkv, D, S;  // S: the sequence's positions read, [0, S)
  float scale;
  int64_t window;  // > 0: positions s with q_pos - s >= window are hidden (sliding window); 0: none
  float softcap;   // > 0: scores become softcap(score) (graph/ops/formulas.h) before the mask; 0: none
  const float* sinks = nullptr;  // [H] per-head logits in the normaliser only (graph/ops/attention.cpp)
  // Packed key/value blocks shared by all jobs (attention_pack), or null: each job packs its own.
  const float* packed = nullptr;
  // Split decode (one query row per job's rows, several jobs per kv head): the job reads
  // positions [s_begin, s_end) only (s_end 0: S; any bounds, not only whole key blocks) and, where
  // partial is set, leaves its unnormalised rows, then each row's max and normaliser, in partial
  // ([R, D], [R], [R]) for attention() to merge, instead of writing out.
  int64_t s_begin = 0, s_end = 0;
  float* partial = nullptr;
  // batch_invariant: every query row's scores in the decode path's order (K rows as they lie, 16
  // products summed at once), however many rows the job holds; never packed.
  bool invariant = false;
};

// What an attention row's accumulated sum e^(s_j - m) v_j is multiplied by: 1 / l, or with a sink
// logit for head h (graph/ops/attention.cpp) e^(m - m') / (l e^(m - m') + e^(sink - m')), m' the
// larger of m and the sink. No key visible (m = -inf): 0, the row is zeros.
inline float normaliser_inverse(const float* sinks, int64_t h, float m, float l) {
  if (sinks == nullptr) return l > 0.0f ? 1.0f / l : 0.0f;
  if (!(m > -std::numeric_limits<float>::infinity())) return 0.0f;
  const float top = std::max(m, sinks[h]);
  const float keep = std::exp(m - top);
  return keep / (l * keep + std::exp(sinks[h] - top));
}

// Floats of one packed block of kKeyBlock cache rows: K transposed [D, kKeyBlock], then V as f32
// [kKeyBlock, D] (f16 caches only; f32 V rows are read in place).
inline int64_t attention_block_floats(int64_t D) { return 2 * D * 64; }

struct VecOps {
  // y = x / sqrt(mean(x^2) + eps) * w over one row of n.
  void (*rms_norm)(const float* x, const float* w, float* y, int64_t n, float eps);
  // y = silu(g) * u, silu(g) = g / (1 + e^-g).
  void (*swiglu)(const float* g, const float* u, float* y, int64_t n);
  void (*silu)(const float* g, float* y, int64_t n);
  void (*add)(const float* a, const float* b, float* y, int64_t n);
  void (*mul)(const float* a, const float* b, float* y, int64_t n);
  // Attention of one job for query rows [t0, t1); scratch holds attention_scratch_floats().
  void (*attention)(const AttentionJob& job, int64_t hk, int64_t t0, int64_t t1, float* scratch);
  // Packs cache rows [s0, s0 + kKeyBlock) of kv head hk into `out` (attention_block_floats(D)).
  void (*attention_pack)(const AttentionJob& job, int64_t hk, int64_t s0, float* out);
  // One token of the gated delta rule (graph/ops/delta_net.cpp) on one head's state m [D, D]
  // (m[j * D + i] = S[i][j]): each row decayed, read against k, corrected by beta (v_j - that
  // read), then read against q into o[j] * scale (o null: no read).
  void (*delta_rule)(float* m, const float* k, const float* q, const float* v, float decay, float beta,
                     float* o, int64_t D, float scale);
};

const VecOps& vec_ops_scalar();
const VecOps& vec_ops_avx2();
const VecOps& vec_ops_avx512();
// The tier's routines (scalar for anything below AVX2).
const VecOps& vec_ops_for(Isa isa);

// Query rows per attention work item, and the per-thread scratch it needs.
int64_t attention_rows_per_job(int64_t group);
int64_t attention_scratch_floats(int64_t group, int64_t D);

}  // namespace glass::backend::cpu::kernels
