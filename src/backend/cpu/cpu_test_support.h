#pragma once
// Test helpers for the cpu backend's tests (header-only, test targets only): run a graph on any
// backend, the ISA tiers this machine runs, random weights of every storage type.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/kernels/matmul.h"
#include "formats/half.h"
#include "support/graph_runner.h"

namespace glass::backend::cpu::testing {

// Runs a compiled plan once on run's inputs and states; fills run.outputs.
inline Status run_plan(const Plan& plan, test::GraphRun& run) {
  const graph::Graph& cg = plan.compiled_graph();
  StepArgs args;
  args.bind = run.bind;
  auto ptr = [](test::Buffer& b) -> void* {
    return std::visit([](auto& v) -> void* { return v.data(); }, b);
  };
  for (graph::NodeId id : cg.leaves(graph::Op::Input))
    args.inputs.push_back(ptr(run.inputs.at(cg.node(id).name)));
  for (graph::NodeId id : cg.leaves(graph::Op::State))
    args.states.push_back(ptr(run.states.at(cg.node(id).name)));
  run.outputs.clear();
  for (const graph::Output& o : cg.outputs)
    run.outputs.emplace_back(static_cast<size_t>(graph::resolve(cg.node(o.node).shape, run.bind).numel()));
  for (auto& o : run.outputs) args.outputs.push_back(o.data());
  auto ws = plan.make_workspace();
  return plan.run(args, *ws, run.stats);
}

inline Status run_on(const Backend& be, const graph::Graph& g, test::GraphRun& run,
                     const graph::Bindings& max, const std::map<std::string, const void*>& weights = {},
                     bool fuse = true, bool batch_invariant = false) {
  CompileOptions opt;
  opt.max = max;
  opt.fuse = fuse;
  opt.batch_invariant = batch_invariant;
  auto resolver = [&](const graph::Node& n) -> Result<const void*> {
    auto it = weights.find(n.name);
    if (it == weights.end()) return make_error(ErrorCode::InvalidArgument, "test: no weight " + n.name);
    return it->second;
  };
  auto plan = be.compile(g, resolver, opt);
  if (!plan) return plan.error();
  return run_plan(**plan, run);
}

// Every tier this CPU runs, scalar first.
inline std::vector<Isa> runnable_isas() {
  std::vector<Isa> v;
  for (int i = 0; i <= static_cast<int>(detect_isa()); ++i) v.push_back(static_cast<Isa>(i));
  return v;
}

// Whether this CPU's best tier copies weights of type t into a kernel layout (repack_weights) under
// its decode strategy: the kernel table says, per tier and strategy (Q4_0 in 16-row groups on AVX2
// and AVX-512, Q8_0 on AVX-512 only, Q6_K but under the sequential strategy).
inline bool repacks(graph::DType t) {
  return kernels::repacked_matmul_kernel(detect_isa(), t, detect_decode_strategy()) != nullptr;
}

inline graph::Bindings bindings(int64_t t, int64_t s) {
  graph::Bindings b;
  b[graph::Sym::T] = t;
  b[graph::Sym::S] = s;
  return b;
}

// Byte offsets of the f16 scale fields (d, then dmin / m where present) in one block of `t`.
inline std::vector<size_t> scale_offsets(graph::DType t) {
  using graph::DType;
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
      return {0};
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K:
      return {0, 2};
    case DType::Q2_K:
      return {80, 82};
    case DType::Q3_K:
      return {108};
    case DType::Q6_K:
      return {208};
    default:
      return {};
  }
}

// `rows` x `k` weights of type t: random quants with sane scales, or N(0, 0.5) values.
inline std::vector<uint8_t> random_weights(graph::DType t, int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto& tr = graph::traits(t);
  const size_t n = static_cast<size_t>(rows * k);
  std::vector<uint8_t> out(*graph::dtype_bytes(t, n));
  std::normal_distribution<float> normal(0.0f, 0.5f);
  if (!tr.quantized) {
    for (size_t i = 0; i < n; ++i) {
      const float v = normal(rng);
      if (t == graph::DType::F32) {
        std::memcpy(out.data() + 4 * i, &v, 4);
      } else {
        const uint16_t h = t == graph::DType::F16 ? formats::f32_to_f16(v) : formats::f32_to_bf16(v);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
    }
    return out;
  }
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> scale(0.002f, 0.02f);
  for (size_t b = 0; b < out.size() / static_cast<size_t>(tr.block_bytes); ++b)
    for (size_t off : scale_offsets(t)) {
      const uint16_t h = formats::f32_to_f16(scale(rng));
      std::memcpy(out.data() + b * static_cast<size_t>(tr.block_bytes) + off, &h, 2);
    }
  if (t == graph::DType::MXFP4)  // E8M0 exponents of scales 2^-7 .. 2^-3, as weights have them
    for (size_t b = 0; b < out.size() / static_cast<size_t>(tr.block_bytes); ++b)
      out[b * static_cast<size_t>(tr.block_bytes)] = static_cast<uint8_t>(120 + rng() % 5);
  if (t == graph::DType::Q8_A) {  // f32 scale and offset
    std::uniform_real_distribution<float> offset(-0.05f, 0.05f);
    for (size_t b = 0; b < out.size() / static_cast<size_t>(tr.block_bytes); ++b) {
      const float d = scale(rng) / 16.0f, m = offset(rng);
      std::memcpy(out.data() + b * static_cast<size_t>(tr.block_bytes), &d, 4);
      std::memcpy(out.data() + b * static_cast<size_t>(tr.block_bytes) + 4, &m, 4);
    }
  }
  return out;
}

inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    den += static_cast<double>(want[i]) * want[i];
  }
  return den > 0 ? num / den : num;
}

}  // namespace glass::backend::cpu::testing
