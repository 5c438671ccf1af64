// The cpu plan on a block shaped like a llama layer: intermediates share arena space by liveness,
// norm / swiglu / add run in place, matmuls reading one input share one quantized copy of it, the
// output is written straight into the caller's buffer, and the result is the ref backend's (same
// graph; NMSE 1e-10 with f32 weights, 1e-3 with q8_0 ones: five matmuls' 8-bit activations against
// the ref's f32 ones). With fusion (the default) and without (CompileOptions::fuse = false).
#include <gtest/gtest.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_test_support.h"
#include "backend/ref/ref_backend.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;

struct Block {
  graph::Graph g;
  std::vector<std::vector<uint8_t>> weights;
  std::map<std::string, const void*> bound;
};

Block layer_like(DType wt) {
  const int64_t D = 64, F = 96;
  graph::Builder b;
  auto x = b.input("x", Shape{Dim::symbol(Sym::T), Dim::constant(D)}, DType::F32);
  auto n1 = b.parameter("n1", graph::make_shape({D}), DType::F32);
  auto wa = b.parameter("wa", graph::make_shape({D, D}), wt);
  auto wb = b.parameter("wb", graph::make_shape({D, D}), wt);
  auto gate = b.parameter("gate", graph::make_shape({F, D}), wt);
  auto up = b.parameter("up", graph::make_shape({F, D}), wt);
  auto down = b.parameter("down", graph::make_shape({D, F}), wt);
  auto h0 = b.rms_norm(x, n1, 1e-5f);
  // Two matmuls of one input, built one after the other: the operands of + and of a call are
  // unsequenced, and GCC and clang build them in different orders.
  auto ya = b.matmul(h0, wa);
  auto yb = b.matmul(h0, wb);
  auto h = x + ya + yb;
  auto f = b.rms_norm(h, n1, 1e-5f);
  auto g = b.matmul(f, gate);
  auto u = b.matmul(f, up);
  b.output("y", h + b.matmul(b.swiglu(g, u), down));
  Block blk{*b.finish(), {}, {}};
  uint32_t seed = 5;
  for (const char* name : {"wa", "wb", "gate", "up", "down"}) {
    const graph::Node& n = blk.g.node(blk.g.find_leaf(graph::Op::Parameter, name));
    blk.weights.push_back(testing::random_weights(wt, n.shape[0].value, n.shape[1].value, seed++));
    blk.bound[name] = blk.weights.back().data();
  }
  blk.weights.push_back(std::vector<uint8_t>(D * 4));
  const auto norm = test::random_floats(static_cast<size_t>(D), 9, 0.1f);
  for (int64_t i = 0; i < D; ++i) {
    const float v = 1.0f + norm[static_cast<size_t>(i)];
    std::memcpy(blk.weights.back().data() + 4 * i, &v, 4);
  }
  blk.bound["n1"] = blk.weights.back().data();
  return blk;
}

TEST(CpuPlan, ReusesBuffersRunsInPlaceAndMatchesRef) {
  for (DType wt : {DType::F32, DType::Q8_0})
    for (bool fuse : {false, true}) {
      SCOPED_TRACE(fuse ? "fused" : "not fused");
      SCOPED_TRACE(graph::dtype_name(wt));
      Block blk = layer_like(wt);
      const auto resolver = [&](const graph::Node& n) -> Result<const void*> { return blk.bound.at(n.name); };
      CompileOptions opt;
      opt.max = testing::bindings(40, 0);
      opt.fuse = fuse;
      auto plan = CpuBackend({2, {}}).compile(blk.g, resolver, opt);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      const auto info = cpu_plan_info(**plan);
      ASSERT_TRUE(info.has_value());
      EXPECT_LT(info->arena_bytes, info->arena_unshared) << graph::dtype_name(wt);
      if (fuse) {
        // Three matmul_add (the output one included) and one matmul_swiglu; in place: the second
        // matmul_add over the first one's sum (its residual).
        EXPECT_EQ(info->n_in_place, 1u);
        EXPECT_EQ(info->n_kernels, 6u);
      } else {
        // In place: the second add (over the first) and swiglu (over the gate product); not the first
        // add (x is a step input), the norms (their inputs are read again) or the output.
        EXPECT_EQ(info->n_in_place, 2u);
        // Leaves run nothing; the two pairs of matmuls reading one input (wa/wb, gate/up) run as
        // one step each (matmul_group), so 9 steps for 11 kernel nodes.
        EXPECT_EQ(info->n_kernels, 9u);
        const auto& log = (*plan)->rewrites().fired;
        EXPECT_NE(std::find(log.begin(), log.end(),
                            "matmul_group: 2 matmuls reading one input run as one dispatch (x2)"),
                  log.end());
      }

      for (int64_t T : {1, 17, 40}) {
        test::GraphRun run;
        run.inputs["x"] = test::random_floats(static_cast<size_t>(T * 64), 3);
        run.bind = testing::bindings(T, 0);
        test::GraphRun want = run, got = run;
        ASSERT_TRUE(testing::run_on(ref::RefBackend{}, blk.g, want, opt.max, blk.bound).ok());
        ASSERT_TRUE(testing::run_on(CpuBackend({2, {}}), blk.g, got, opt.max, blk.bound, fuse).ok());
        const double tol = wt == DType::F32 ? 1e-10 : 1e-3;
        EXPECT_LE(testing::nmse(got.outputs[0], want.outputs[0]), tol) << graph::dtype_name(wt) << " T=" << T;
      }
    }
}

// The backend tells its owner of every byte it has repacked, once, so that the owner can drop the
// original's pages (MappedFile::release): each of the five q4_0 weights' bytes exactly, in parts,
// when the first plan is compiled; nothing more for the second plan, nor for a backend that does
// not repack.
TEST(CpuPlan, ToldOfEachRepackedWeightOnce) {
  Block blk = layer_like(DType::Q4_0);
  const auto resolver = [&](const graph::Node& n) -> Result<const void*> { return blk.bound.at(n.name); };
  std::mutex mu;
  std::vector<std::pair<uintptr_t, size_t>> parts;
  const WeightCopied copied = [&](const void* p, size_t bytes) {
    std::lock_guard lock(mu);
    parts.emplace_back(reinterpret_cast<uintptr_t>(p), bytes);
  };
  CompileOptions small, large;
  small.max = testing::bindings(1, 0);
  large.max = testing::bindings(40, 0);
  const CpuBackend repacking({2, {}, true, copied}), plain({2, {}, false, copied});
  ASSERT_TRUE(plain.compile(blk.g, resolver, large).ok());
  EXPECT_TRUE(parts.empty());
  ASSERT_TRUE(repacking.compile(blk.g, resolver, small).ok());
  const size_t after_first = parts.size();
  ASSERT_TRUE(repacking.compile(blk.g, resolver, large).ok());
  EXPECT_EQ(parts.size(), after_first);
  if (!testing::repacks(DType::Q4_0)) {
    EXPECT_TRUE(parts.empty());
    return;
  }
  std::sort(parts.begin(), parts.end());
  for (size_t i = 1; i < parts.size(); ++i)
    EXPECT_LE(parts[i - 1].first + parts[i - 1].second, parts[i].first) << "parts overlap";
  size_t all = 0, weights = 0;
  for (const auto& part : parts) all += part.second;
  for (const char* name : {"wa", "wb", "gate", "up", "down"}) {
    const graph::Node& n = blk.g.node(blk.g.find_leaf(graph::Op::Parameter, name));
    const auto begin = reinterpret_cast<uintptr_t>(blk.bound.at(name));
    const size_t bytes =
        *graph::dtype_bytes(DType::Q4_0, static_cast<uint64_t>(n.shape[0].value * n.shape[1].value));
    size_t told = 0;
    for (const auto& [at, len] : parts)
      if (at >= begin && at < begin + bytes) {
        EXPECT_LE(at + len, begin + bytes) << name;
        told += len;
      }
    EXPECT_EQ(told, bytes) << name;
    weights += bytes;
  }
  EXPECT_EQ(all, weights);  // nothing but the five weights
}

// Q4_0 weights on an AVX-512 VNNI machine are read from one repacked copy (16-row groups) made
// for the backend and shared by its plans; the results equal the file-layout kernels' closely
// (same integer block sums; the float order differs) at every T: decode, tile and packed paths.
TEST(CpuPlan, RepacksQ4_0WeightsOnceAndMatchesTheFileLayout) {
  Block blk = layer_like(DType::Q4_0);
  const auto resolver = [&](const graph::Node& n) -> Result<const void*> { return blk.bound.at(n.name); };
  CompileOptions small, large;
  small.max = testing::bindings(1, 0);
  large.max = testing::bindings(40, 0);
  const CpuBackend repacking({2, {}, true}), plain({2, {}, false});
  const bool packed = testing::repacks(DType::Q4_0);
  auto decode = repacking.compile(blk.g, resolver, small);
  auto prefill = repacking.compile(blk.g, resolver, large);
  auto unpacked = plain.compile(blk.g, resolver, large);
  ASSERT_TRUE(decode.ok() && prefill.ok() && unpacked.ok());
  // Five weights in four matmul nodes once fused (gate and up in one matmul_swiglu).
  EXPECT_EQ(cpu_plan_info(**decode)->n_repacked, packed ? 4u : 0u);
  EXPECT_EQ(cpu_plan_info(**prefill)->n_repacked, packed ? 4u : 0u);
  EXPECT_EQ(cpu_plan_info(**unpacked)->n_repacked, 0u);
  if (packed) {
    const auto& log = (*prefill)->rewrites().fired;
    const auto line = std::find_if(log.begin(), log.end(),
                                   [](const std::string& l) { return l.starts_with("repack_weights"); });
    ASSERT_NE(line, log.end());
    EXPECT_NE(line->find("repack_weights: 4 matmuls read q4_0x16 copies of their weights (5 weights"),
              std::string::npos)
        << *line;  // five weights, repacked once for both plans
  }
  for (int64_t T : {1, 3, 5, 17, 40}) {
    test::GraphRun run;
    run.inputs["x"] = test::random_floats(static_cast<size_t>(T * 64), 7);
    run.bind = testing::bindings(T, 0);
    test::GraphRun got = run, want = run;
    ASSERT_TRUE(testing::run_on(repacking, blk.g, got, large.max, blk.bound).ok());
    ASSERT_TRUE(testing::run_on(plain, blk.g, want, large.max, blk.bound).ok());
    EXPECT_LE(testing::nmse(got.outputs[0], want.outputs[0]), 1e-10) << "T=" << T;
  }
}

// A tied embedding: the table is also the output projection's weight. Once the backend has
// repacked it for the matmul, the lookup reads the repacked copy (its owner may have dropped the
// file's pages of the original): the same rows as the plain backend's, bit for bit, with rows in
// full 16-row groups and in the tail, and still after the original's bytes are overwritten.
TEST(CpuPlan, TiedEmbeddingReadsTheRepackedTable) {
  for (DType wt : {DType::Q8_0, DType::Q6_K, DType::F16}) {
    SCOPED_TRACE(graph::dtype_name(wt));
    const int64_t V = 16 * 4 + 3, D = 256;
    graph::Builder b;
    auto ids = b.input("ids", Shape{Dim::symbol(Sym::T)}, DType::I32);
    auto table = b.parameter("table", graph::make_shape({V, D}), wt);
    auto x = b.embedding(table, ids);
    b.output("x", x);
    b.output("logits", b.matmul(x, table));
    const graph::Graph g = *b.finish();
    std::vector<uint8_t> w = testing::random_weights(wt, V, D, 11);
    const std::map<std::string, const void*> bound{{"table", w.data()}};
    const auto resolver = [&](const graph::Node& n) -> Result<const void*> { return bound.at(n.name); };
    CompileOptions opt;
    opt.max = testing::bindings(8, 0);
    const CpuBackend repacking({2, {}, true}), plain({2, {}, false});
    auto plan = repacking.compile(g, resolver, opt);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const bool repacked = cpu_plan_info(**plan)->n_repacked == 1;
    EXPECT_EQ(repacked, testing::repacks(wt)) << graph::dtype_name(wt);
    const auto& log = (*plan)->rewrites().fired;
    EXPECT_EQ(std::count_if(log.begin(), log.end(),
                            [](const std::string& l) {
                              return l.starts_with("embedding_repacked: the lookup in 'table'");
                            }),
              repacked ? 1 : 0);
    test::GraphRun run;
    run.inputs["ids"] = std::vector<int32_t>{0, 5, 17, 40, 63, 64, 66, 17};
    run.bind = testing::bindings(8, 0);
    test::GraphRun want = run, got = run;
    ASSERT_TRUE(testing::run_on(plain, g, want, opt.max, bound).ok());
    ASSERT_TRUE(testing::run_plan(**plan, got).ok());
    EXPECT_EQ(got.outputs[0], want.outputs[0]);
    EXPECT_LE(testing::nmse(got.outputs[1], want.outputs[1]), 1e-10);
    if (!repacked) continue;
    std::fill(w.begin(), w.end(), uint8_t{0});
    test::GraphRun again = run;
    ASSERT_TRUE(testing::run_plan(**plan, again).ok());
    EXPECT_EQ(again.outputs[0], want.outputs[0]);
  }
}

TEST(CpuPlan, RunRejectsBindingsOutsideTheBucket) {
  Block blk = layer_like(DType::F32);
  CompileOptions opt;
  opt.max = testing::bindings(4, 0);
  test::GraphRun run;
  run.inputs["x"] = test::random_floats(8 * 64, 3);
  run.bind = testing::bindings(8, 0);
  auto st = testing::run_on(CpuBackend({1, {}}), blk.g, run, opt.max, blk.bound);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::CapacityExceeded);
  EXPECT_NE(st.error().message.find("cpu: T = 8 outside this plan's bucket [0, 4]"), std::string::npos)
      << st.error().message;
}

// `--isa` / LoadOptions::isa: each tier this CPU runs by name, with the backend saying which it
// took; a tier above the CPU's or an unknown name is an error, never a quiet fallback.
TEST(CpuBackendIsa, ParsedByNameAndNeverAboveTheCpu) {
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    const std::string name(isa_name(isa));
    auto be = make_backend("cpu", BackendOptions{1, true, {}, name});
    if (isa <= detect_isa()) {
      ASSERT_TRUE(be.ok()) << be.error().message;
      EXPECT_EQ((*be)->describe().rfind("cpu (" + name + ", 1 threads", 0), 0u) << (*be)->describe();
    } else {
      ASSERT_FALSE(be.ok()) << name;
      EXPECT_EQ(be.error().code, ErrorCode::Unsupported);
      EXPECT_NE(be.error().message.find(name), std::string::npos) << be.error().message;
    }
  }
  auto bad = make_backend("cpu", BackendOptions{1, true, {}, "avx9"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::InvalidArgument);
  EXPECT_NE(bad.error().message.find("avx9"), std::string::npos) << bad.error().message;
  auto best = make_backend("cpu", BackendOptions{1, true, {}, ""});
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*best)->describe().rfind("cpu (" + std::string(isa_name(detect_isa())) + ", 1 threads", 0), 0u)
      << (*best)->describe();
}

// The kernel table's listing names each repacked layout with the strategies that walk it, and the
// file-layout kernels a strategy runs instead of the default: one line per matmul table row.
TEST(CpuBackendIsa, KernelTableListsLayoutsAndStrategies) {
  const CpuBackend be({1, {}, true});
  const std::vector<std::string> lines = be.kernel_table();
  const auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  EXPECT_TRUE(has("matmul(f32, q4_0) scalar")) << lines.size() << " lines";
  if (kernels::matmul_rows(Isa::Avx512).empty()) GTEST_SKIP() << "not an x86 build";
  EXPECT_TRUE(has("matmul(f32, q4_0) avx512 repacked to q4_0x16, decode walk spread, lockstep"));
  EXPECT_TRUE(has("matmul(f32, q4_0) avx512 repacked to q4_0x16, decode walk sequential"));
  EXPECT_TRUE(has("matmul(f32, q4_k) avx512 repacked to q4_kx16, decode walk spread"));
  EXPECT_TRUE(has("matmul(f32, q4_k) avx512 repacked to q4_kx16, decode walk sequential"));
  EXPECT_TRUE(has("matmul(f32, q6_k) avx512 in the file's layout, decode walk sequential"));
  EXPECT_TRUE(has("matmul(f32, f32) avx512 in the file's layout, decode walk sequential"));
  EXPECT_TRUE(has("matmul(f32, f16) avx512 repacked to f16x16, decode walk spread, lockstep"));
  EXPECT_TRUE(has("matmul(f32, f16) avx512 repacked to f16x16, decode walk sequential"));
  EXPECT_TRUE(has("matmul(f32, q6_k) avx512 repacked to q6_kx16, decode walk spread"));
}

// The decode strategy is the CPU's unless the options name one; the backend says which it took, and
// an unknown name is an error. The library reads no environment (the glass command maps
// GLASS_DECODE_STRATEGY to the option: cli_flags_test).
TEST(CpuBackendIsa, DecodeStrategyByCpuKindOrTheOptions) {
  const char* before = std::getenv("GLASS_DECODE_STRATEGY");
  const std::string saved = before != nullptr ? before : "";
  ASSERT_EQ(setenv("GLASS_DECODE_STRATEGY", "zigzag", 1), 0);
  auto ignored = make_backend("cpu", BackendOptions{1, true, {}, ""});
  ASSERT_TRUE(ignored.ok()) << ignored.error().message;
  EXPECT_EQ(static_cast<const CpuBackend&>(**ignored).decode_strategy(), detect_decode_strategy());
  // A strategy given in the options is taken, and a bad one names the option.
  for (const DecodeStrategy s :
       {DecodeStrategy::Spread, DecodeStrategy::Lockstep, DecodeStrategy::Sequential}) {
    const std::string name(decode_strategy_name(s));
    BackendOptions given{1, true, {}, "avx512", name};
    auto be = make_backend("cpu", given);
    if (!be.ok()) break;  // no AVX-512 tier here
    EXPECT_EQ(static_cast<const CpuBackend&>(**be).decode_strategy(), s);
    EXPECT_EQ((*be)->describe(), "cpu (avx512, 1 threads, " + name + " decode)");
  }
  auto bad_option = make_backend("cpu", BackendOptions{1, true, {}, "", "diagonal"});
  ASSERT_FALSE(bad_option.ok());
  EXPECT_NE(bad_option.error().message.find("decode_strategy: unknown decode strategy 'diagonal'"),
            std::string::npos)
      << bad_option.error().message;
  ASSERT_EQ(unsetenv("GLASS_DECODE_STRATEGY"), 0);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Zen 4: AMD family 25 (cpuid leaf 1: base family 15 plus extended family 10) with AVX-512.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  ASSERT_NE(__get_cpuid(1, &eax, &ebx, &ecx, &edx), 0);
  const bool zen4 = __builtin_cpu_is("amd") && ((eax >> 8) & 0xF) == 0xF && ((eax >> 20) & 0xFF) == 10 &&
                    __builtin_cpu_supports("avx512f");
  EXPECT_EQ(detect_decode_strategy(), __builtin_cpu_is("intel") ? DecodeStrategy::Lockstep
                                      : zen4                    ? DecodeStrategy::Sequential
                                                                : DecodeStrategy::Spread);
#endif
  if (!saved.empty()) setenv("GLASS_DECODE_STRATEGY", saved.c_str(), 1);
}

}  // namespace
}  // namespace glass::backend::cpu
