// Direct reference kernels of the composite ops (formulas in graph/ops/*.cpp), written as the
// plain loops a reader checks against the paper. Tests compare each with its decomposition.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/ref/kernel.h"
#include "graph/ops/formulas.h"
#include "graph/ops/infer.h"

namespace glass::backend::ref {

Status rms_norm(const KernelArgs& a) {
  const float eps = std::get<graph::RmsNormAttrs>(a.node.attrs).eps;
  const int64_t n = a.in[0].dim(a.in[0].ext.rank - 1);
  const int64_t rows = a.in[0].ext.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.in[0].f32() + r * n;
    double sum_sq = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) a.out.f32()[r * n + i] = x[i] * scale * a.in[1].f32()[i];
  }
  return {};
}

Status rope(const KernelArgs& a) {
  const auto& r = std::get<graph::RopeAttrs>(a.node.attrs);
  const int64_t T = a.in[0].dim(0), H = a.in[0].dim(1), D = a.in[0].dim(2);
  const int64_t half = r.n_rot / 2;
  const std::vector<float> base = graph::rope_inv_freq(r);
  const bool has_factors = a.node.inputs.size() == 3;
  for (int64_t t = 0; t < T; ++t) {
    const auto pos = static_cast<float>(a.in[1].i32()[t]);
    for (int64_t i = 0; i < half; ++i) {
      const float freq =
          has_factors ? base[static_cast<size_t>(i)] / a.in[2].f32()[i] : base[static_cast<size_t>(i)];
      const float theta = pos * freq;
      const float c = std::cos(theta), s = std::sin(theta);
      for (int64_t h = 0; h < H; ++h) {
        const float* x = a.in[0].f32() + (t * H + h) * D;
        float* o = a.out.f32() + (t * H + h) * D;
        const int64_t i0 = r.mode == graph::RopeMode::Normal ? 2 * i : i;
        const int64_t i1 = r.mode == graph::RopeMode::Normal ? 2 * i + 1 : i + half;
        o[i0] = x[i0] * c - x[i1] * s;
        o[i1] = x[i0] * s + x[i1] * c;
      }
    }
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = r.n_rot; d < D; ++d)
        a.out.f32()[(t * H + h) * D + d] = a.in[0].f32()[(t * H + h) * D + d];
  }
  return {};
}

// For each query row and head: scores over its own sequence's positions 0 .. q_pos (and within the
// sliding window: older positions are neither read nor scored), each read from the cache row the
// sequence's block table names, soft-capped, softmax, then the weighted sum of V rows. Scratch
// holds one score per position a table row can hold, one f32 row of K or V, and D accumulators.
Status attention(const KernelArgs& a) {
  const auto& attrs = std::get<graph::AttentionAttrs>(a.node.attrs);
  const TensorRef& q = a.in[0];
  const TensorRef& kc = a.in[1];
  const TensorRef& vc = a.in[2];
  const TensorRef& table = a.in[5];
  const int64_t T = q.dim(0), H = q.dim(1), D = q.dim(2);
  const int64_t C = kc.dim(0), Hkv = kc.dim(1), N = table.dim(0), MB = table.dim(1), B = attrs.block_size;
  const int64_t kv_len = graph::resolve(attrs.kv_len, *a.bind);
  if (kv_len > MB * B || kv_len <= 0)
    return make_error(ErrorCode::CapacityExceeded,
                      fmt::format("ref: attention '{}' reads {} keys, a block table row holds {}",
                                  a.node.name, kv_len, MB * B));
  const int64_t group = H / Hkv;
  const float* sinks = a.node.inputs.size() == 7 ? a.in[6].f32() : nullptr;  // [H] or none
  float* scores = a.scratch;  // a score per key the step reads: kv_len of them at most
  float* row = a.scratch + kv_len;
  float* acc = row + D;
  for (int64_t t = 0; t < T; ++t) {
    const int32_t qpos = a.in[3].i32()[t];
    const int32_t qseq = a.in[4].i32()[t];
    if (qseq < 0 || qseq >= N || qpos < 0 || qpos >= kv_len)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("ref: attention '{}': token {} at position {} of sequence {} outside the "
                                    "step's {} sequences of at most {} keys",
                                    a.node.name, t, qpos, qseq, N, kv_len));
    const int32_t* blocks = table.i32() + qseq * MB;
    const int64_t first = attrs.window > 0 ? std::max<int64_t>(0, qpos - attrs.window + 1) : 0;
    const int64_t n_keys = qpos + 1;
    for (int64_t j = first; j < n_keys; ++j)
      if (blocks[j / B] < 0 || (blocks[j / B] + 1) * B > C)
        return make_error(ErrorCode::InvalidArgument,
                          fmt::format("ref: attention '{}': sequence {} position {} in block {} outside the "
                                      "cache's {} blocks",
                                      a.node.name, qseq, j, blocks[j / B], C / B));
    auto cache_row = [&](int64_t j) { return blocks[j / B] * B + j % B; };
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / group;
      const float* qv = q.f32() + (t * H + h) * D;
      float max_score = -std::numeric_limits<float>::infinity();
      for (int64_t j = first; j < n_keys; ++j) {
        if (auto st = load_row_f32(kc, cache_row(j) * Hkv + hk, row); !st) return st;
        double dot = 0.0;
        for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(qv[d]) * row[d];
        scores[j] = static_cast<float>(dot) * attrs.scale;
        if (attrs.softcap > 0.0f) scores[j] = graph::softcap(scores[j], attrs.softcap);
        max_score = std::max(max_score, scores[j]);
      }
      if (sinks != nullptr) max_score = std::max(max_score, sinks[h]);
      double denom = sinks != nullptr ? std::exp(static_cast<double>(sinks[h]) - max_score) : 0.0;
      for (int64_t j = first; j < n_keys; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        denom += scores[j];
      }
      float* o = a.out.f32() + (t * H + h) * D;
      std::fill(acc, acc + D, 0.0f);
      for (int64_t j = first; j < n_keys; ++j) {
        if (scores[j] == 0.0f) continue;
        if (auto st = load_row_f32(vc, cache_row(j) * Hkv + hk, row); !st) return st;
        for (int64_t d = 0; d < D; ++d) acc[d] += scores[j] * row[d];
      }
      for (int64_t d = 0; d < D; ++d) o[d] = static_cast<float>(acc[d] / denom);
    }
  }
  return {};
}

Status activation(const KernelArgs& a) {
  const int64_t n = a.out.ext.numel();
  const graph::Op op = a.node.op;
  const bool gated = op == graph::Op::SwiGlu || op == graph::Op::GeGlu;
  const float cap = op == graph::Op::Softcap ? std::get<graph::SoftcapAttrs>(a.node.attrs).cap : 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = a.in[0].f32()[i];
    float y;
    if (op == graph::Op::Softcap)
      y = graph::softcap(g, cap);
    else if (op == graph::Op::Gelu || op == graph::Op::GeGlu)
      y = graph::gelu_tanh(g);
    else
      y = g / (1.0f + std::exp(-g));  // silu
    a.out.f32()[i] = gated ? y * a.in[1].f32()[i] : y;
  }
  return {};
}

Status embedding(const KernelArgs& a) {
  const TensorRef& table = a.in[0];
  const int64_t V = table.dim(0), D = table.dim(1);
  for (int64_t t = 0; t < a.in[1].dim(0); ++t) {
    const int32_t id = a.in[1].i32()[t];
    if (id < 0 || id >= V)
      return make_error(
          ErrorCode::InvalidArgument,
          fmt::format("ref: embedding '{}': token id {} outside the vocabulary [0, {})", a.node.name, id, V));
    if (auto st = load_row_f32(table, id, a.out.f32() + t * D); !st) return st;
  }
  return {};
}

}  // namespace glass::backend::ref
