// The attention kernel's work split: one job per (kv head, block of query rows), each streaming
// over the cache with the ISA's attention routine (attention_impl.h) and per-thread scratch. A
// decode step (one query row) splits further: over a long cache each kv head's keys in ranges
// (attention_split_decode); over a short one, with kv heads not a multiple of the threads, the
// (head, key) pairs in one equal run per thread (attention_balanced_decode). Split heads merge.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vec_ops.h"

namespace glass::backend::cpu::kernels {

namespace {
constexpr int64_t kKeyBlockFloats = 64;   // attention_impl.h's kKeyBlock
constexpr int64_t kRowBlockMax = 4;       // attention_impl.h's kRowBlockMax
constexpr int64_t kMaxBalancedRuns = 64;  // threads of a balanced decode (attention_balanced_decode)
}  // namespace

int64_t attention_rows_per_job(int64_t group) { return group >= 64 ? 1 : 64 / group; }

namespace {
// Decode (one query row) with fewer kv heads than 4 jobs per thread: each kv head's keys are split
// into ranges of at least 4 key blocks, merged afterwards (flash-decoding), so that e.g. SmolLM2's
// 3 kv heads keep 2 threads busy over a long cache. Shorter ranges measured slower than the
// imbalance they remove (SmolLM2 tg128: 291 -> 331-370 us of attention per token with 1-block ranges).
int64_t decode_splits(int64_t Hkv, int64_t S, int threads) {
  const int64_t key_blocks = (S + kKeyBlockFloats - 1) / kKeyBlockFloats / 4;
  const int64_t want = (4 * static_cast<int64_t>(threads) + Hkv - 1) / Hkv;
  return std::max<int64_t>(1, std::min(key_blocks, want));
}
// Floats of one split's partial result: R rows of D, then R maxima and R normalisers.
int64_t partial_floats(int64_t R, int64_t D) { return R * (D + 2); }
}  // namespace

int64_t attention_scratch_floats(int64_t group, int64_t D) {
  const int64_t R = attention_rows_per_job(group) * group;
  return R * D + 2 * R + kRowBlockMax * kKeyBlockFloats + attention_block_floats(D) + 16;
}

namespace {
// Scratch begins with the step's runs of one sequence's tokens ([t0, t1) each), 64-byte rounded.
size_t runs_bytes(int64_t T) { return (static_cast<size_t>(2 * T) * sizeof(int64_t) + 63) / 64 * 64; }

// The shared packed blocks of a multi-job step: every block of every kv head, [0, S).
int64_t packed_floats(int64_t Hkv, int64_t D, int64_t S) {
  return Hkv * ((S + kKeyBlockFloats - 1) / kKeyBlockFloats) * attention_block_floats(D);
}
}  // namespace

size_t attention_scratch(const graph::Graph& g, const graph::Node& n, const graph::Bindings& max, int threads,
                         const KernelData&) {
  const graph::Shape& q = g.node(n.inputs[0]).shape;
  const graph::Shape& k = g.node(n.inputs[1]).shape;
  const int64_t group = q[1].value / k[1].value, D = q[2].value;
  const int64_t S = graph::resolve(std::get<graph::AttentionAttrs>(n.attrs).kv_len, max);
  const int64_t T = graph::resolve(q[0], max);
  const int64_t shared = T > attention_rows_per_job(group) ? packed_floats(k[1].value, D, S) : 0;
  const int64_t partials =
      std::max(k[1].value * decode_splits(k[1].value, S, threads), int64_t{2} * threads) *
      partial_floats(group, D);
  return runs_bytes(T) +
         (static_cast<size_t>(threads) * static_cast<size_t>(attention_scratch_floats(group, D)) +
          static_cast<size_t>(shared) + static_cast<size_t>(partials)) *
             sizeof(float);
}

namespace {
// Kv head hk's rows of the output from n partial results over consecutive key ranges (partial(i):
// R unnormalised rows, R maxima, R normalisers), merged as the online softmax does: each rescaled
// by e^(m_i - m), summed, divided by the summed normalisers.
template <class Partial>
void merge_partials(const AttentionJob& job, int64_t hk, int64_t n, const Partial& partial) {
  const int64_t group = job.H / job.Hkv, D = job.D, R = group;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < R; ++r) {
    float m = neg_inf;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, partial(i)[R * D + r]);
    float* o = job.out + (hk * group + r) * D;
    for (int64_t d = 0; d < D; ++d) o[d] = 0.0f;
    if (m == neg_inf) continue;  // nothing visible: zeros, as the unsplit kernel writes
    float l = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float* p = partial(i);
      if (p[R * D + r] == neg_inf) continue;
      const float w = std::exp(p[R * D + r] - m);
      l += w * p[R * D + R + r];
      for (int64_t d = 0; d < D; ++d) o[d] += w * p[r * D + d];
    }
    const float inv = normaliser_inverse(job.sinks, hk * group + r, m, l);
    for (int64_t d = 0; d < D; ++d) o[d] *= inv;
  }
}

// One query row: kv head hk's keys in `splits` ranges of whole key blocks, one job each, written
// as partial results after the threads' scratch; then per head the ranges merge.
void attention_split_decode(const AttentionJob& job0, int64_t splits, const VecOps& ops,
                            float* threads_scratch, size_t per_thread, ThreadPool& pool) {
  const int64_t Hkv = job0.Hkv, group = job0.H / Hkv, D = job0.D, R = group;
  const int64_t key_blocks = (job0.S + kKeyBlockFloats - 1) / kKeyBlockFloats;
  float* partials = threads_scratch + static_cast<size_t>(pool.size()) * per_thread;
  auto partial_of = [&](int64_t hk, int64_t i) {
    return partials + (hk * splits + i) * partial_floats(R, D);
  };
  parallel_for(pool, Hkv * splits, 1, [&](int64_t j0, int64_t j1, int thread) {
    float* scratch = threads_scratch + static_cast<size_t>(thread) * per_thread;
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t hk = j / splits, i = j % splits;
      AttentionJob job = job0;
      job.s_begin = key_blocks * i / splits * kKeyBlockFloats;
      job.s_end = std::min(job0.S, key_blocks * (i + 1) / splits * kKeyBlockFloats);
      job.partial = partial_of(hk, i);
      ops.attention(job, hk, 0, 1, scratch);
    }
  });
  for (int64_t hk = 0; hk < Hkv; ++hk)
    merge_partials(job0, hk, splits, [&](int64_t i) { return partial_of(hk, i); });
}

// Decode with too few keys to split (decode_splits 1) and kv heads not a multiple of the threads
// (SmolLM2's 3 on 2 threads, which took two heads' time): the (kv head, key) pairs in one equal
// run per thread, so one head is cut between two threads. A thread's whole heads write their rows;
// a cut head's two pieces leave partial results (slots 2t and 2t + 1 of thread t's run), merged
// afterwards in key order.
void attention_balanced_decode(const AttentionJob& job0, const VecOps& ops, float* threads_scratch,
                               size_t per_thread, ThreadPool& pool) {
  const int64_t Hkv = job0.Hkv, R = job0.H / Hkv, D = job0.D, S = job0.S, total = Hkv * S;
  const int64_t runs = pool.size();
  float* partials = threads_scratch + static_cast<size_t>(runs) * per_thread;
  auto first_head = [&](int64_t t) { return total * t / runs / S; };
  // Run t's piece of head hk: keys [a, b) of [0, S), empty when a >= b.
  auto piece = [&](int64_t t, int64_t hk) {
    const int64_t lo = total * t / runs, hi = total * (t + 1) / runs;
    return std::pair{std::clamp(lo - hk * S, int64_t{0}, S), std::clamp(hi - hk * S, int64_t{0}, S)};
  };
  auto slot = [&](int64_t t, int64_t hk) {
    return partials + (2 * t + (hk == first_head(t) ? 0 : 1)) * partial_floats(R, D);
  };
  pool.run(runs, [&](int64_t t, int thread) {
    float* scratch = threads_scratch + static_cast<size_t>(thread) * per_thread;
    const int64_t last = std::min(Hkv - 1, (total * (t + 1) / runs - 1) / S);
    for (int64_t hk = first_head(t); hk <= last; ++hk) {
      const auto [a, b] = piece(t, hk);
      if (a >= b) continue;
      AttentionJob job = job0;
      job.s_begin = a;
      job.s_end = b;
      job.partial = a == 0 && b == S ? nullptr : slot(t, hk);
      ops.attention(job, hk, 0, 1, scratch);
    }
  });
  for (int64_t hk = 0; hk < Hkv; ++hk) {
    std::array<const float*, kMaxBalancedRuns> pieces{};  // a head has a piece in at most every run
    int64_t n = 0;
    for (int64_t t = 0; t < runs; ++t) {
      const auto [a, b] = piece(t, hk);
      if (a >= b || (a == 0 && b == S)) continue;
      pieces[static_cast<size_t>(n++)] = slot(t, hk);
    }
    if (n > 0) merge_partials(job0, hk, n, [&](int64_t i) { return pieces[static_cast<size_t>(i)]; });
  }
}
}  // namespace

namespace {
// The query rows [t0, t1) of one run of a sequence's tokens as one job: that sequence's block table
// row, and its positions [0, newest query + 1). False when a position the run reads lies in a block
// outside the cache (a malformed table), which is an error, not a read.
bool run_job(const AttentionJob& base, const int32_t* q_seq, const int32_t* table, int64_t MB, int64_t C,
             int64_t t0, int64_t t1, AttentionJob& job) {
  job = base;
  int32_t newest = 0;
  for (int64_t t = t0; t < t1; ++t) newest = std::max(newest, base.q_pos[t]);
  job.blocks = table + static_cast<int64_t>(q_seq[t0]) * MB;
  job.S = int64_t{newest} + 1;
  const int64_t first = base.window > 0 ? std::max<int64_t>(0, base.q_pos[t0] - base.window + 1) : 0;
  for (int64_t b = first / base.block_size; b <= newest / base.block_size; ++b)
    if (job.blocks[b] < 0 || (int64_t{job.blocks[b]} + 1) * base.block_size > C) return false;
  return true;
}
}  // namespace

Status attention(const KernelArgs& a) {
  const auto& attrs = std::get<graph::AttentionAttrs>(a.node.attrs);
  const TensorView& q = a.in[0];
  const TensorView& kc = a.in[1];
  const TensorView& table = a.in[5];
  const int64_t T = q.dim(0), H = q.dim(1), D = q.dim(2), C = kc.dim(0), Hkv = kc.dim(1);
  const int64_t N = table.dim(0), MB = table.dim(1), B = attrs.block_size;
  const int64_t S_max = graph::resolve(attrs.kv_len, a.bind);
  if (S_max > MB * B || S_max <= 0)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("cpu: attention '{}' reads {} keys, a block table row holds {}",
                                  a.node.name, S_max, MB * B));
  const int32_t* q_pos = a.in[3].i32();
  const int32_t* q_seq = a.in[4].i32();
  for (int64_t t = 0; t < T; ++t)
    if (q_seq[t] < 0 || q_seq[t] >= N || q_pos[t] < 0 || q_pos[t] >= S_max)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("cpu: attention '{}': token {} at position {} of sequence {} outside the "
                                    "step's {} sequences of at most {} keys",
                                    a.node.name, t, q_pos[t], q_seq[t], N, S_max));
  const AttentionJob base{q.f32(),
                          kc.data,
                          a.in[2].data,
                          kc.dtype == graph::DType::F16,
                          q_pos,
                          nullptr,
                          B,
                          a.out.f32(),
                          H,
                          Hkv,
                          D,
                          S_max,
                          attrs.scale,
                          attrs.window,
                          attrs.softcap,
                          a.node.inputs.size() == 7 ? a.in[6].f32() : nullptr};
  const int64_t group = H / Hkv, rows = attention_rows_per_job(group);
  const auto per_thread = static_cast<size_t>(attention_scratch_floats(group, D));
  const auto& ops = data_of<VecOps>(a.data);
  auto* runs = reinterpret_cast<int64_t*>(a.scratch);
  float* threads_scratch = reinterpret_cast<float*>(a.scratch + runs_bytes(T));
  auto bad_table = [&](int64_t t) {
    return make_error(
        ErrorCode::InvalidArgument,
        fmt::format("cpu: attention '{}': sequence {} reads a block outside the cache's {} blocks",
                    a.node.name, q_seq[t], C / B));
  };

  // The step's runs: consecutive tokens of one sequence (a batch's tokens come grouped by sequence).
  int64_t n_runs = 0;
  for (int64_t t = 0; t < T; ++t)
    if (t == 0 || q_seq[t] != q_seq[t - 1]) {
      runs[2 * n_runs] = t;
      if (n_runs > 0) runs[2 * n_runs - 1] = t;
      ++n_runs;
    }
  runs[2 * n_runs - 1] = T;

  // One sequence's decode step: split its keys when they are many (not under batch_invariant: the
  // merged ranges round differently from one pass, so the token would depend on being alone).
  if (n_runs == 1 && T == 1 && !a.batch_invariant) {
    AttentionJob job0;
    if (!run_job(base, q_seq, table.i32(), MB, C, 0, 1, job0)) return bad_table(0);
    if (const int64_t splits = decode_splits(Hkv, job0.S, a.pool.size()); splits > 1) {
      attention_split_decode(job0, splits, ops, threads_scratch, per_thread, a.pool);
      return {};
    }
    if (Hkv % a.pool.size() != 0 && a.pool.size() <= kMaxBalancedRuns) {
      attention_balanced_decode(job0, ops, threads_scratch, per_thread, a.pool);
      return {};
    }
  }
  // Short runs (a decode token, a few tokens of a sequence): one job per (run, kv head), all in one
  // dispatch; each reads its own sequence's keys as they lie.
  int64_t n_short = 0;
  for (int64_t r = 0; r < n_runs; ++r)
    if (runs[2 * r + 1] - runs[2 * r] <= rows) {
      AttentionJob probe;
      if (!run_job(base, q_seq, table.i32(), MB, C, runs[2 * r], runs[2 * r + 1], probe))
        return bad_table(runs[2 * r]);
      ++n_short;
    }
  if (n_short > 0) {
    parallel_for(a.pool, n_short * Hkv, 1, [&](int64_t j0, int64_t j1, int thread) {
      float* scratch = threads_scratch + static_cast<size_t>(thread) * per_thread;
      int64_t r = -1, seen = -1;  // the run of short-run index j / Hkv, found by walking forward
      for (int64_t j = j0; j < j1; ++j) {
        while (seen < j / Hkv) {
          ++r;
          if (runs[2 * r + 1] - runs[2 * r] <= rows) ++seen;
        }
        AttentionJob job;
        run_job(base, q_seq, table.i32(), MB, C, runs[2 * r], runs[2 * r + 1], job);
        job.invariant = a.batch_invariant;
        ops.attention(job, j % Hkv, runs[2 * r], runs[2 * r + 1], scratch);
      }
    });
  }
  // Long runs (a prompt chunk), one at a time: its key blocks packed once for all its jobs.
  for (int64_t r = 0; r < n_runs; ++r) {
    const int64_t t0 = runs[2 * r], t1 = runs[2 * r + 1];
    if (t1 - t0 <= rows) continue;
    AttentionJob job;
    if (!run_job(base, q_seq, table.i32(), MB, C, t0, t1, job)) return bad_table(t0);
    job.invariant = a.batch_invariant;
    const AttentionJob unpacked = job;
    float* packed = threads_scratch + static_cast<size_t>(a.pool.size()) * per_thread;
    const int64_t kb = (job.S + kKeyBlockFloats - 1) / kKeyBlockFloats, block = attention_block_floats(D);
    if (!job.invariant) {  // batch_invariant: every job reads the rows as they lie
      parallel_for(a.pool, Hkv * kb, 4, [&](int64_t b0, int64_t b1, int) {
        for (int64_t b = b0; b < b1; ++b)
          ops.attention_pack(unpacked, b / kb, (b % kb) * kKeyBlockFloats, packed + b * block);
      });
      job.packed = packed;
    }
    // Latest query blocks first: under a causal mask they read the most keys, and handing them out
    // first lets the cheap early blocks fill the gaps at the end instead of the costly ones.
    const int64_t blocks = (t1 - t0 + rows - 1) / rows, jobs = Hkv * blocks;
    parallel_for(a.pool, jobs, 1, [&](int64_t j0, int64_t j1, int thread) {
      float* scratch = threads_scratch + static_cast<size_t>(thread) * per_thread;
      for (int64_t i = j0; i < j1; ++i) {
        const int64_t j = jobs - 1 - i, hk = j % Hkv, b0 = t0 + (j / Hkv) * rows;
        ops.attention(job, hk, b0, std::min(t1, b0 + rows), scratch);
      }
    });
  }
  return {};
}

}  // namespace glass::backend::cpu::kernels
