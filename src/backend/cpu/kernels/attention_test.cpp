// Fused cpu attention (after kv_write, as models use it) against the ref backend at every ISA tier:
// GQA groups 1, 2, 3, 4, 5, 7 and 8, head sizes 8 / 20 / 64 (vector tails), query blocks of 1 (decode; past
// 700 and 1100 split the keys into ranges merged afterwards, some wholly outside a window; on 2-4
// threads, kv heads not a multiple of them are cut between the threads and merged), 7
// and 150 rows (several jobs and key blocks), a cached prefix, f32 and f16 caches, NaN in cache rows
// past S that must never be read; sliding windows (with NaN in whole key blocks older than every
// query's window, which must be skipped unread) and score soft-capping. Tolerance 2e-5 max abs: the cpu sums
// in f32 with an online softmax, the ref in double over the whole row; outputs are averages of N(0, 1)
// values.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/cpu_test_support.h"
#include "backend/ref/ref_backend.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::Dim;
using graph::DType;
using graph::Shape;
using graph::Sym;

struct Case {
  int64_t H, Hkv, D, T, past;
  DType cache;
  bool seqs = false;  // two sequences sharing the cache (rows alternate), with sequence-id inputs
  int64_t window = 0;
  float softcap = 0.0f;
  int64_t poison = 0;  // leading cache rows set to NaN: outside every query's window
  int threads = 3;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "H=" << c.H << " Hkv=" << c.Hkv << " D=" << c.D << " T=" << c.T << " past=" << c.past << " "
      << graph::dtype_name(c.cache) << (c.seqs ? " seqs" : "") << " window=" << c.window
      << " softcap=" << c.softcap << " threads=" << c.threads;
}

class CpuAttention : public ::testing::TestWithParam<Case> {};

TEST_P(CpuAttention, MatchesRef) {
  const Case c = GetParam();
  const int64_t C = c.past + c.T + 9;
  graph::Builder b;
  const Shape tok{Dim::symbol(Sym::T)};
  auto q = b.input("q", Shape{Dim::symbol(Sym::T), Dim::constant(c.H), Dim::constant(c.D)}, DType::F32);
  auto k = b.input("k", Shape{Dim::symbol(Sym::T), Dim::constant(c.Hkv), Dim::constant(c.D)}, DType::F32);
  auto v = b.input("v", Shape{Dim::symbol(Sym::T), Dim::constant(c.Hkv), Dim::constant(c.D)}, DType::F32);
  auto pos = b.input("pos", tok, DType::I32);
  auto slots = b.input("slots", tok, DType::I32);
  auto kc = b.state("kc", graph::make_shape({C, c.Hkv, c.D}), c.cache);
  auto vc = b.state("vc", graph::make_shape({C, c.Hkv, c.D}), c.cache);
  auto kp = b.state("kp", graph::make_shape({C}), DType::I32);
  auto kp2 = b.kv_write(kp, pos, slots);
  auto k2 = b.kv_write(kc, k, slots);
  auto v2 = b.kv_write(vc, v, slots);
  b.update_state(kp, kp2);
  b.update_state(kc, k2);
  b.update_state(vc, v2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  const graph::AttentionAttrs attrs{scale, Dim::symbol(Sym::S), c.window, c.softcap};
  if (c.seqs) {
    auto seq = b.input("seq", tok, DType::I32);
    auto ks = b.state("ks", graph::make_shape({C}), DType::I32);
    auto ks2 = b.kv_write(ks, seq, slots);
    b.update_state(ks, ks2);
    b.output("o", b.attention(q, k2, v2, pos, kp2, seq, ks2, attrs));
  } else {
    b.output("o", b.attention(q, k2, v2, pos, kp2, attrs));
  }
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;

  test::GraphRun run;
  run.inputs["q"] = test::random_floats(static_cast<size_t>(c.T * c.H * c.D), 4);
  run.inputs["k"] = test::random_floats(static_cast<size_t>(c.T * c.Hkv * c.D), 5);
  run.inputs["v"] = test::random_floats(static_cast<size_t>(c.T * c.Hkv * c.D), 6);
  std::vector<int32_t> p(static_cast<size_t>(c.T));
  for (int64_t t = 0; t < c.T; ++t) p[static_cast<size_t>(t)] = static_cast<int32_t>(c.past + t);
  run.inputs["pos"] = p;
  run.inputs["slots"] = p;
  const size_t cache_elems = static_cast<size_t>(C * c.Hkv * c.D);
  std::vector<float> kcache = test::random_floats(cache_elems, 7),
                     vcache = test::random_floats(cache_elems, 8);
  for (size_t i = static_cast<size_t>((c.past + c.T) * c.Hkv * c.D); i < cache_elems; ++i)
    kcache[i] = vcache[i] = NAN;
  for (size_t i = 0; i < static_cast<size_t>(c.poison * c.Hkv * c.D); ++i) kcache[i] = vcache[i] = NAN;
  if (c.cache == DType::F16) {  // f16 bits, two per float slot
    auto pack = [](const std::vector<float>& src) {
      std::vector<float> out((src.size() + 1) / 2);
      auto* h = reinterpret_cast<uint16_t*>(out.data());
      for (size_t i = 0; i < src.size(); ++i) h[i] = formats::f32_to_f16(src[i]);
      return out;
    };
    kcache = pack(kcache);
    vcache = pack(vcache);
  }
  std::vector<int32_t> kpos(static_cast<size_t>(C), 1 << 20);
  for (int64_t i = 0; i < c.past; ++i) kpos[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  run.states["kc"] = kcache;
  run.states["vc"] = vcache;
  run.states["kp"] = kpos;
  if (c.seqs) {
    std::vector<int32_t> seq(static_cast<size_t>(c.T)), kseq(static_cast<size_t>(C), 7);
    for (int64_t t = 0; t < c.T; ++t) seq[static_cast<size_t>(t)] = static_cast<int32_t>(t % 2);
    for (int64_t i = 0; i < c.past; ++i) kseq[static_cast<size_t>(i)] = static_cast<int32_t>(i % 2);
    run.inputs["seq"] = seq;
    run.states["ks"] = kseq;
  }
  run.bind = testing::bindings(c.T, c.past + c.T);
  const graph::Bindings max = testing::bindings(c.T + 3, C);

  test::GraphRun want = run;
  auto st = testing::run_on(ref::RefBackend{}, *g, want, max);
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (Isa isa : testing::runnable_isas()) {
    test::GraphRun got = run;
    auto s = testing::run_on(CpuBackend({c.threads, isa}), *g, got, max);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_LE(test::max_abs_diff(got.outputs[0], want.outputs[0]), 2e-5) << isa_name(isa);
    EXPECT_EQ(got.stats.state_rows_written, want.stats.state_rows_written);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuAttention,
    ::testing::Values(
        Case{4, 2, 8, 3, 5, DType::F32}, Case{8, 8, 32, 1, 40, DType::F32},
        Case{9, 3, 64, 1, 130, DType::F32}, Case{8, 2, 32, 7, 0, DType::F32},
        Case{6, 2, 20, 150, 3, DType::F32}, Case{9, 3, 64, 70, 64, DType::F16},
        Case{4, 1, 64, 1, 200, DType::F16}, Case{9, 3, 64, 1, 700, DType::F32},
        Case{4, 1, 64, 1, 1100, DType::F16}, Case{4, 2, 64, 1, 1100, DType::F32, false, 100, 0.0f, 512},
        Case{4, 2, 64, 1, 1100, DType::F32, true}, Case{8, 2, 32, 9, 30, DType::F32, true},
        Case{9, 3, 64, 100, 20, DType::F16, true}, Case{4, 2, 64, 1, 200, DType::F32, false, 16, 0.0f, 128},
        Case{4, 2, 64, 30, 170, DType::F32, false, 24, 0.0f, 128},
        Case{8, 2, 32, 70, 10, DType::F16, false, 12, 0.0f},
        Case{4, 2, 64, 48, 0, DType::F32, false, 0, 2.0f}, Case{8, 4, 20, 9, 30, DType::F32, true, 7, 3.0f},
        // Decode with groups of 5-8 (Qwen2.5's 7): two register blocks of rows, K and V rows read as they
        // lie.
        Case{14, 2, 64, 1, 700, DType::F32}, Case{14, 2, 64, 1, 1100, DType::F16},
        Case{8, 1, 32, 1, 300, DType::F32}, Case{10, 2, 64, 1, 90, DType::F32, true},
        Case{16, 2, 64, 1, 1100, DType::F32, false, 100, 0.0f, 512},
        // Decode over too few keys to split, kv heads not a multiple of the threads: the (head, key)
        // pairs in one run per thread, heads cut between runs and merged (SmolLM2's 3 on 2 threads;
        // one head on 2; 3 on 4, where a run holds the end of one head and the start of the next).
        Case{.H = 9, .Hkv = 3, .D = 64, .T = 1, .past = 130, .cache = DType::F32, .threads = 2},
        Case{.H = 9, .Hkv = 3, .D = 64, .T = 1, .past = 20, .cache = DType::F16, .threads = 2},
        Case{.H = 4, .Hkv = 1, .D = 64, .T = 1, .past = 200, .cache = DType::F32, .threads = 2},
        Case{.H = 6, .Hkv = 3, .D = 32, .T = 1, .past = 50, .cache = DType::F32, .threads = 4},
        Case{.H = 10, .Hkv = 5, .D = 64, .T = 1, .past = 90, .cache = DType::F32, .seqs = true, .threads = 2},
        Case{.H = 4,
             .Hkv = 2,
             .D = 64,
             .T = 1,
             .past = 300,
             .cache = DType::F32,
             .window = 16,
             .poison = 256,
             .threads = 4},
        Case{.H = 8,
             .Hkv = 4,
             .D = 20,
             .T = 1,
             .past = 30,
             .cache = DType::F32,
             .seqs = true,
             .window = 7,
             .softcap = 3.0f}));

}  // namespace
}  // namespace glass::backend::cpu
