#pragma once
// Attention streaming over the KV cache (flash attention's online softmax, Dao et al. 2022; Milakov
// & Gimelshein 2018), written once against vec.h and compiled per ISA. Semantics are the attention
// op's (graph/ops/attention.cpp): query t of head h reads its sequence's positions [0, S) of kv
// head h / group, position s at the cache row the sequence's block table names (cache_row); s is
// visible iff s <= q_pos[t]; out = softmax(softcap(scale * q k^T)) v. With a sliding window W, s is
// also hidden when q_pos[t] - s >= W; key blocks wholly outside every query's window are skipped
// unread. A key block of kKeyBlock positions may span several cache blocks: rows are read through
// per-row pointers, so where the blocks lie changes nothing but the addresses.
//
// One call handles the `group` query heads of one kv head for a block of query rows, walking the
// cache in blocks of kKeyBlock rows. For each block and each register block of query rows: scores =
// scale * Q K^T (K transposed into scratch, so 16 scores come from one vector FMA per element of d;
// a decode step's single register block instead reads K rows as they lie and sums 16 products at
// once, sum_lanes16), masked; then per query row the
// running max m, normaliser l and accumulator acc are rescaled by e^(m_old - m_new) and the block's
// e^(score - m_new) v rows are added. No [T, S] score matrix exists; memory is O(rows x kKeyBlock).
#include <cmath>
#include <limits>

#include "backend/cpu/kernels/vec.h"
#include "backend/cpu/kernels/vec_ops.h"
#include "graph/ops/formulas.h"

namespace glass::backend::cpu::kernels {
namespace {

constexpr int64_t kKeyBlock = 64;
constexpr int kKeyVecs = static_cast<int>(kKeyBlock / kLanes);
constexpr int kRowBlockMax = 4;  // attention.cpp's scratch holds this many rows of probabilities
// Decode reads the cache rows as they lie and asks for each line 16 rows ahead of its use: without
// it the K and V reads are bound by the misses in flight. glass_attention_bench (f32, huge pages,
// 2 threads, alternating): SmolLM2's 9 (3) heads, S 1024 and 4096, 17-18 -> 27-29 GB/s; the 1B's
// 32 (8) heads 19-23 -> 22-25 (8 or 32 rows ahead, or an L2 hint, measured no better). A prefetch
// past the cache's end never faults.
constexpr int64_t kRowsAhead = 16;

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13) | (man != 0 ? 0x00400000u : 0u);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else {
    const float mag = static_cast<float>(man) * 0x1.0p-24f;
    return sign ? -mag : mag;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// n halves to floats: F16C where the file is built for it (the AVX2 and AVX-512 tiers).
inline void halves_to_floats(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

// Element offsets of kv head hk's part of positions [s0, s0 + n) of the job's sequence (the rows its
// block table names), walking the table with one division per call, not one per row. Positions at
// or past S repeat the last one before it (they serve as prefetch targets only).
inline void position_offsets(const AttentionJob& j, int64_t s0, int64_t n, int64_t hk, int64_t* off) {
  const int64_t B = j.block_size, stride = j.Hkv * j.D;
  int64_t bi = s0 / B, oi = s0 % B, last = 0;
  for (int64_t s = 0; s < n; ++s) {
    if (s0 + s < j.S) {
      last = (int64_t{j.blocks[bi]} * B + oi) * stride + hk * j.D;
      if (++oi == B) {
        oi = 0;
        ++bi;
      }
    }
    off[s] = last;
  }
}

// The row at element offset `off` as f32: in place for an f32 cache, converted into tmp for f16.
inline const float* cache_row_f32(const void* cache, bool f16, int64_t off, int64_t D, float* tmp) {
  if (!f16) return static_cast<const float*>(cache) + off;
  halves_to_floats(static_cast<const uint16_t*>(cache) + off, tmp, D);
  return tmp;
}

#if defined(__AVX512F__)
// out[i * out_stride + r] = rows[r][i] for a 16 x 16 tile: 32-bit, 64-bit and two 128-bit-lane
// interleaves (64 shuffles instead of 256 scalar stores).
inline void transpose16(const float* const* rows, float* out, int64_t out_stride) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(rows[i]);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  auto lo64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  auto hi64 = [](__m512 a, __m512 b) {
    return _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a), _mm512_castps_pd(b)));
  };
  for (int i = 0; i < 16; i += 4) {
    r[i] = lo64(t[i], t[i + 2]);
    r[i + 1] = hi64(t[i], t[i + 2]);
    r[i + 2] = lo64(t[i + 1], t[i + 3]);
    r[i + 3] = hi64(t[i + 1], t[i + 3]);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0x88);
      t[h + 4 + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_ps(out + i * out_stride, _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88));
    _mm512_storeu_ps(out + (8 + i) * out_stride, _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd));
  }
}
#endif

#if defined(__AVX512F__)
// Lane i of the result: the sum of v[i]'s 16 lanes. Pairs of vectors interleave and add at 32-bit,
// 64-bit and 128-bit granularity (45 ops for 16 sums, against 16 separate horizontal sums' ~130).
inline __m512 sum_lanes16(const __m512 (&v)[16]) {
  __m512 a[8], b[4];
  for (int i = 0; i < 8; ++i)
    a[i] =
        _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {
    const __m512d x = _mm512_castps_pd(a[2 * i]), y = _mm512_castps_pd(a[2 * i + 1]);
    b[i] =
        _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  // b[m], 128-bit lane l, element e: lane l's part of v[4m + e]'s sum. Sum the four lanes into lane m.
  const __m512 c0 =
      _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], 0x88), _mm512_shuffle_f32x4(b[0], b[1], 0xdd));
  const __m512 c1 =
      _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], 0x88), _mm512_shuffle_f32x4(b[2], b[3], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, 0x88), _mm512_shuffle_f32x4(c0, c1, 0xdd));
}

// Scores of one query row q (D floats, D % 16 == 0) against K rows [0, n) of a key block, read as
// they lie (krow[i]: key i's row), 16 keys at a time; keys past n score 0 (masked afterwards).
// With prefetch, each line read also asks for the same line 16 rows on (krow[i + 16]: the next 16
// keys, the next block's first 16 after the last): see kRowsAhead.
inline void direct_scores(const float* q, const float* const* krow, int64_t n, int64_t D,
                          f32v (&sc)[kKeyVecs], bool prefetch) {
  for (int x = 0; x < kKeyVecs; ++x) {
    const int64_t s0 = x * 16, m = n - s0 < 16 ? n - s0 : 16;
    if (m <= 0) {
      sc[x] = splat(0.0f);
      continue;
    }
    __m512 acc[16];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    // Rows past n re-read the last row (their scores are masked): a fixed 16-row body.
    for (int64_t d = 0; d < D; d += 16) {
      const __m512 qd = _mm512_loadu_ps(q + d);
      if (prefetch)
        for (int i = 0; i < 16; ++i) __builtin_prefetch(krow[s0 + kRowsAhead + i] + d, 0, 3);
      for (int i = 0; i < 16; ++i)
        acc[i] = _mm512_fmadd_ps(qd, _mm512_loadu_ps(krow[s0 + (i < m ? i : m - 1)] + d), acc[i]);
    }
    sc[x] = reinterpret_cast<f32v>(sum_lanes16(acc));
  }
}
#endif

// K rows of positions [s0, s0 + kKeyBlock) of kv head hk transposed to out[d * kKeyBlock + s]
// (positions past S as zeros); for f16 caches the V rows follow as f32 [kKeyBlock, D].
void attention_pack(const AttentionJob& j, int64_t hk, int64_t s0, float* out) {
  const int64_t D = j.D, n = j.S - s0 < kKeyBlock ? j.S - s0 : kKeyBlock;
  float* vb = out + D * kKeyBlock;
  int64_t off[kKeyBlock];
  position_offsets(j, s0, n, hk, off);
#if defined(__AVX512F__)
  if (D % 16 == 0) {
    // 16 x 16 tiles; f16 K rows are converted into the V area first (the V rows replace them below).
    const float* krow[kKeyBlock];
    for (int64_t s = 0; s < n; ++s) krow[s] = cache_row_f32(j.k, j.f16_cache, off[s], D, vb + s * D);
    alignas(64) static constexpr float kZeros[16] = {};
    for (int64_t a = 0; a < kKeyBlock; a += 16)
      for (int64_t d = 0; d < D; d += 16) {
        const float* rows[16];
        for (int64_t i = 0; i < 16; ++i) rows[i] = a + i < n ? krow[a + i] + d : kZeros;
        transpose16(rows, out + d * kKeyBlock + a, kKeyBlock);
      }
  } else
#endif
  {
    for (int64_t s = 0; s < kKeyBlock; ++s) {
      if (s >= n) {
        for (int64_t d = 0; d < D; ++d) out[d * kKeyBlock + s] = 0.0f;
        continue;
      }
      const float* row = cache_row_f32(j.k, j.f16_cache, off[s], D, vb);
      for (int64_t d = 0; d < D; ++d) out[d * kKeyBlock + s] = row[d];
    }
  }
  if (j.f16_cache)
    for (int64_t s = 0; s < n; ++s) cache_row_f32(j.v, true, off[s], D, vb + s * D);
}

// One key block as the rows of a job read it. Row pointers run kRowsAhead past the block (the
// next block's rows, or the last row again) for the decode path's prefetches.
struct KeyBlock {
  const float* kt;           // K transposed, [D, kKeyBlock]; null when the scores read K rows (krow)
  const float* const* krow;  // K rows (the direct decode path), or null
  const float* const* vrow;  // V rows
  int64_t n;                 // positions of the block inside [0, S)
  const int32_t* kpos;       // [kKeyBlock], positions past n at INT32_MAX (never visible)
};

// The positions a job's queries span: the newest, and the oldest any of them sees through the
// sliding window (window 0: no limit).
struct QueryRange {
  int32_t q_max;
  int64_t oldest;
};
inline QueryRange query_range(const AttentionJob& j, int64_t t0, int64_t t1) {
  int32_t q_max = j.q_pos[t0], q_min = j.q_pos[t0];
  for (int64_t t = t0; t < t1; ++t) {
    q_max = j.q_pos[t] > q_max ? j.q_pos[t] : q_max;
    q_min = j.q_pos[t] < q_min ? j.q_pos[t] : q_min;
  }
  return {q_max, j.window > 0 ? static_cast<int64_t>(q_min) - j.window + 1 : INT64_MIN};
}

// The positions of key block [s0, s0 + n) (past n never visible); false when no query of the job
// sees any of them (all newer than every query, or all outside every query's window), so the
// block is skipped unread.
inline bool block_positions(int64_t s0, int64_t n, const QueryRange& range, int32_t* kpos) {
  for (int64_t s = 0; s < kKeyBlock; ++s) kpos[s] = s < n ? static_cast<int32_t>(s0 + s) : 0x7fffffff;
  return s0 <= range.q_max && s0 + n - 1 >= range.oldest;
}

// One query row's online-softmax step over a key block: raw scores sc (q . k) scaled, soft-capped
// and masked; the block's probabilities e^(score - m_new) written to pr (zeros where hidden); the
// running max m and normaliser l updated. c rescales the row's accumulator (1 when nothing in the
// block is visible: the row's state stays as it is).
struct RowUpdate {
  float c;
  bool visible;
};
inline RowUpdate softmax_update(const AttentionJob& j, int64_t t, const KeyBlock& b, f32v (&sc)[kKeyVecs],
                                float* pr, float& m, float& l) {
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const i32v win = i32v{} + static_cast<int32_t>(j.window > 0 ? j.window : 0);
  const i32v qp = i32v{} + j.q_pos[t];
  f32v vmx = splat(neg_inf);
  for (int x = 0; x < kKeyVecs; ++x) {
    i32v kp;
    std::memcpy(&kp, b.kpos + x * kLanes, sizeof(kp));
    i32v visible = kp <= qp;
    if (j.window > 0) visible = visible & (qp - kp < win);
    sc[x] = sc[x] * splat(j.scale);
    if (j.softcap > 0.0f) {  // rare (Gemma 2): the scalar formula, lane by lane
      alignas(64) float tmp[kLanes];
      store(tmp, sc[x]);
      for (float& y : tmp) y = graph::softcap(y, j.softcap);
      sc[x] = load(tmp);
    }
    sc[x] = visible ? sc[x] : splat(neg_inf);
    vmx = vmax(vmx, sc[x]);
  }
  const float block_max = hmax(vmx);
  if (block_max == neg_inf) {
    for (int x = 0; x < kKeyVecs; ++x) store(pr + x * kLanes, splat(0.0f));
    return {1.0f, false};
  }
  const float m_new = block_max > m ? block_max : m;
  const float c = m == neg_inf ? 0.0f : sexp(m - m_new);
  f32v vsum = splat(0.0f);
  for (int x = 0; x < kKeyVecs; ++x) {
    const f32v e = vexp(sc[x] - splat(m_new));
    const f32v pe = sc[x] == splat(neg_inf) ? splat(0.0f) : e;
    store(pr + x * kLanes, pe);
    vsum += pe;
  }
  m = m_new;
  l = l * c + hsum(vsum);
  return {c, true};
}

// Query rows per register block: NR rows share every K and V load (NR x 4 accumulators), which
// keeps enough independent FMA chains in flight to cover the FMA latency. A row's key-block scores
// take 64 / kLanes registers (8 with AVX2's ymm, of 16), so narrower ISAs take 2 rows.
#if defined(__AVX512F__)
constexpr int kRowBlock = 4;
#else
constexpr int kRowBlock = 2;
#endif

// The job's rows [r0, r0 + NR) against one key block: scores, masked softmax update of m, l and the
// accumulator rows. p holds NR rows of kKeyBlock probabilities.
template <int NR>
void attend_block_rows(const AttentionJob& j, int64_t hk, int64_t t0, int64_t r0, const KeyBlock& b,
                       float* acc, float* m, float* l, float* p) {
  const int64_t group = j.H / j.Hkv, D = j.D;
  const float* qv[NR];
  int64_t tq[NR];
  for (int i = 0; i < NR; ++i) {
    const int64_t r = r0 + i;
    tq[i] = t0 + r / group;
    qv[i] = j.q + (tq[i] * j.H + hk * group + r % group) * D;
  }
  f32v sc[NR][kKeyVecs];
#if defined(__AVX512F__)
  if (b.krow != nullptr) {
    for (int i = 0; i < NR; ++i) direct_scores(qv[i], b.krow, b.n, D, sc[i], i == 0);
  } else
#endif
  {
    for (auto& row : sc)
      for (auto& v : row) v = splat(0.0f);
    for (int64_t d = 0; d < D; ++d) {
      f32v kv[kKeyVecs];
      for (int x = 0; x < kKeyVecs; ++x) kv[x] = load(b.kt + d * kKeyBlock + x * kLanes);
      for (int i = 0; i < NR; ++i) {
        const f32v qd = splat(qv[i][d]);
        for (int x = 0; x < kKeyVecs; ++x) sc[i][x] = fmadd(qd, kv[x], sc[i][x]);
      }
    }
  }
  float c[NR];
  bool any = false;
  for (int i = 0; i < NR; ++i) {
    const RowUpdate u = softmax_update(j, tq[i], b, sc[i], p + i * kKeyBlock, m[r0 + i], l[r0 + i]);
    c[i] = u.c;
    any = any || u.visible;
  }
  if (!any) return;
  // acc = c * acc + sum_s p_s v_s: 64 columns of NR rows at a time in registers.
  float* a[NR];
  for (int i = 0; i < NR; ++i) a[i] = acc + (r0 + i) * D;
  int64_t d = 0;
  for (; d + 4 * kLanes <= D; d += 4 * kLanes) {
    f32v v[NR][4];
    for (int i = 0; i < NR; ++i)
      for (int x = 0; x < 4; ++x) v[i][x] = load(a[i] + d + x * kLanes) * splat(c[i]);
    for (int64_t s = 0; s < b.n; ++s) {
      const float* vr = b.vrow[s] + d;
      if (b.krow != nullptr)  // the direct decode path: V rows as they lie too
        for (int x = 0; x < 4; ++x) __builtin_prefetch(b.vrow[s + kRowsAhead] + d + x * kLanes, 0, 3);
      f32v w[4];
      for (int x = 0; x < 4; ++x) w[x] = load(vr + x * kLanes);
      for (int i = 0; i < NR; ++i) {
        const f32v ps = splat(p[i * kKeyBlock + s]);
        for (int x = 0; x < 4; ++x) v[i][x] = fmadd(ps, w[x], v[i][x]);
      }
    }
    for (int i = 0; i < NR; ++i)
      for (int x = 0; x < 4; ++x) store(a[i] + d + x * kLanes, v[i][x]);
  }
  for (; d + kLanes <= D; d += kLanes) {
    f32v v[NR];
    for (int i = 0; i < NR; ++i) v[i] = load(a[i] + d) * splat(c[i]);
    for (int64_t s = 0; s < b.n; ++s) {
      const f32v w = load(b.vrow[s] + d);
      for (int i = 0; i < NR; ++i) v[i] = fmadd(splat(p[i * kKeyBlock + s]), w, v[i]);
    }
    for (int i = 0; i < NR; ++i) store(a[i] + d, v[i]);
  }
  for (; d < D; ++d)
    for (int i = 0; i < NR; ++i) {
      float v = a[i][d] * c[i];
      for (int64_t s = 0; s < b.n; ++s) v += p[i * kKeyBlock + s] * b.vrow[s][d];
      a[i][d] = v;
    }
}

void attention_block(const AttentionJob& j, int64_t hk, int64_t t0, int64_t t1, float* scratch) {
  const int64_t group = j.H / j.Hkv, D = j.D, R = (t1 - t0) * group;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  float* acc = scratch;                       // [R, D]
  float* m = acc + R * D;                     // [R] running max
  float* l = m + R;                           // [R] running normaliser
  float* p = l + R;                           // [kRowBlockMax, kKeyBlock] probabilities of a row block
  float* own = p + kRowBlockMax * kKeyBlock;  // one packed block, when the job packs its own
  for (int64_t i = 0; i < R * D; ++i) acc[i] = 0.0f;
  for (int64_t r = 0; r < R; ++r) {
    m[r] = neg_inf;
    l[r] = 0.0f;
  }
  const QueryRange range = query_range(j, t0, t1);
  // Decode (one or two register blocks of query rows: a GQA group of one token, up to 8 as Qwen2.5's
  // 7) reads K rows directly: packing (transposing) every key block for one or two uses cost more
  // than the scores themselves (Qwen2.5-0.5B-like Q4_0, -d 1024: see docs/performance.md).
#if defined(__AVX512F__)
  const bool direct = (j.invariant || R <= 2 * kRowBlock) && j.packed == nullptr && D % 16 == 0;
#else
  constexpr bool direct = false;
#endif
  alignas(64) int32_t kpos[kKeyBlock];
  constexpr int64_t kRows = kKeyBlock + kRowsAhead;
  const float* krow[kRows];
  const float* vrow[kRows];
  int64_t off[kRows];
  const auto* k16 = static_cast<const uint16_t*>(j.k);
  const auto* v16 = static_cast<const uint16_t*>(j.v);
  const int64_t s_end = j.s_end > 0 ? j.s_end : j.S;
  for (int64_t s0 = j.s_begin; s0 < s_end; s0 += kKeyBlock) {
    const int64_t n = s_end - s0 < kKeyBlock ? s_end - s0 : kKeyBlock;
    if (!block_positions(s0, n, range, kpos)) continue;

    KeyBlock b{own, nullptr, vrow, n, kpos};
    position_offsets(j, s0, direct ? kRows : n, hk, off);
    if (direct) {
      // K rows as they lie in an f32 cache; an f16 cache's K and V rows converted to f32 rows.
      b.kt = nullptr;
      b.krow = krow;
      if (j.f16_cache) {
        for (int64_t s = 0; s < n; ++s) {
          const int64_t ahead = off[s + kRowsAhead];  // in halves; past S: the last row again
          for (int64_t at = 0; at < 2 * D; at += 64) {
            __builtin_prefetch(reinterpret_cast<const char*>(k16 + ahead) + at, 0, 3);
            __builtin_prefetch(reinterpret_cast<const char*>(v16 + ahead) + at, 0, 3);
          }
          cache_row_f32(j.k, true, off[s], D, own + s * D);
          cache_row_f32(j.v, true, off[s], D, own + (kKeyBlock + s) * D);
        }
        // Rows past the block point into the converted rows again: prefetches only.
        for (int64_t s = 0; s < kRows; ++s) {
          krow[s] = own + (s % kKeyBlock) * D;
          vrow[s] = own + (kKeyBlock + s % kKeyBlock) * D;
        }
      } else {
        const auto* kf = static_cast<const float*>(j.k);
        const auto* vf = static_cast<const float*>(j.v);
        for (int64_t s = 0; s < kRows; ++s) {
          krow[s] = kf + off[s];
          vrow[s] = vf + off[s];
        }
      }
    } else {
      if (j.packed != nullptr) {
        const int64_t n_blocks = (j.S + kKeyBlock - 1) / kKeyBlock;
        b.kt = j.packed + (hk * n_blocks + s0 / kKeyBlock) * attention_block_floats(D);
      } else {
        attention_pack(j, hk, s0, own);
      }
      for (int64_t s = 0; s < n; ++s)
        vrow[s] = j.f16_cache ? b.kt + D * kKeyBlock + s * D : static_cast<const float*>(j.v) + off[s];
    }
    int64_t r = 0;
    for (; r + kRowBlock <= R; r += kRowBlock) attend_block_rows<kRowBlock>(j, hk, t0, r, b, acc, m, l, p);
    // The rest as one block (a decode step's `group` rows are often fewer than kRowBlock).
    switch (R - r) {
      case 1:
        attend_block_rows<1>(j, hk, t0, r, b, acc, m, l, p);
        break;
      case 2:
        if constexpr (kRowBlock > 2) attend_block_rows<2>(j, hk, t0, r, b, acc, m, l, p);
        break;
      case 3:
        if constexpr (kRowBlock > 3) attend_block_rows<3>(j, hk, t0, r, b, acc, m, l, p);
        break;
      default:
        break;
    }
  }
  if (j.partial != nullptr) {
    for (int64_t i = 0; i < R * D; ++i) j.partial[i] = acc[i];
    for (int64_t r = 0; r < R; ++r) {
      j.partial[R * D + r] = m[r];
      j.partial[R * D + R + r] = l[r];
    }
    return;
  }
  for (int64_t r = 0; r < R; ++r) {
    const int64_t t = t0 + r / group, h = hk * group + r % group;
    float* o = j.out + (t * j.H + h) * D;
    const float inv = normaliser_inverse(j.sinks, h, m[r], l[r]);
    for (int64_t d = 0; d < D; ++d) o[d] = acc[r * D + d] * inv;
  }
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
