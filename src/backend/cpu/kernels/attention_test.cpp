// Fused cpu attention (after kv_write, as models use it) against the ref backend at every ISA tier,
// reading each sequence's keys through a block table of shuffled, interleaved blocks of 1 to 128 rows:
// GQA groups 1, 2, 3, 4, 5, 7 and 8, head sizes 8 / 20 / 64 (vector tails), query blocks of 1 (decode; past
// 700 and 1100 split the keys into ranges merged afterwards, some wholly outside a window; on 2-4
// threads, kv heads not a multiple of them are cut between the threads and merged), 7
// and 150 rows (several jobs and key blocks), a cached prefix, f32 and f16 caches, NaN in every cache
// row no query may read (spare blocks, other rows past a sequence's end); sliding windows (with NaN in whole
// key blocks older than every query's window, which must be skipped unread) and score soft-capping. Tolerance
// 2e-5 max abs: the cpu sums in f32 with an online softmax, the ref in double over the whole row; outputs are
// averages of N(0, 1) values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

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
  bool seqs = false;  // two sequences in the step (tokens alternate between them), each its own table
  int64_t window = 0;
  float softcap = 0.0f;
  int64_t poison = 0;  // each sequence's leading positions set to NaN: outside every query's window
  int threads = 3;
  bool grouped = false;  // with seqs: the first sequence's tokens, then the second's (long runs)
  int64_t block_size = 16;
  bool sinks = false;  // a per-head sink logit in every row's normaliser (gpt-oss)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "H=" << c.H << " Hkv=" << c.Hkv << " D=" << c.D << " T=" << c.T << " past=" << c.past << " "
      << graph::dtype_name(c.cache) << (c.seqs ? " seqs" : "") << (c.grouped ? " grouped" : "")
      << " window=" << c.window << " softcap=" << c.softcap << " threads=" << c.threads
      << " block=" << c.block_size << (c.sinks ? " sinks" : "");
}

class CpuAttention : public ::testing::TestWithParam<Case> {};

// Each sequence's blocks are taken from a shuffled pool (so they are neither contiguous nor in order,
// and the sequences' blocks interleave), with spare blocks and every row no query may read set to NaN.
TEST_P(CpuAttention, MatchesRef) {
  const Case c = GetParam();
  const int64_t B = c.block_size, n_seq = c.seqs ? 2 : 1;
  std::vector<int32_t> seq_of(static_cast<size_t>(c.T)), pos(static_cast<size_t>(c.T));
  std::vector<int64_t> len(static_cast<size_t>(n_seq), c.past);
  for (int64_t t = 0; t < c.T; ++t) {
    const int64_t s = !c.seqs ? 0 : c.grouped ? (t < c.T / 2 ? 0 : 1) : t % 2;
    seq_of[static_cast<size_t>(t)] = static_cast<int32_t>(s);
    pos[static_cast<size_t>(t)] = static_cast<int32_t>(len[static_cast<size_t>(s)]++);
  }
  const int64_t longest = *std::max_element(len.begin(), len.end());
  const int64_t MB = (longest + B - 1) / B + 1;
  const int64_t n_blocks = n_seq * MB + 3, C = n_blocks * B;
  std::vector<int32_t> order(static_cast<size_t>(n_blocks));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::mt19937 rng(11);
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int32_t> table(static_cast<size_t>(n_seq * MB), -1);
  size_t next = 0;
  for (int64_t b = 0; b < MB; ++b)  // sequences take blocks in turn: their blocks interleave
    for (int64_t s = 0; s < n_seq; ++s)
      if (b * B < len[static_cast<size_t>(s)]) table[static_cast<size_t>(s * MB + b)] = order[next++];
  auto row = [&](int64_t s, int64_t p) {
    return int64_t{table[static_cast<size_t>(s * MB + p / B)]} * B + p % B;
  };

  graph::Builder b;
  const Shape tok{Dim::symbol(Sym::T)};
  auto q = b.input("q", Shape{Dim::symbol(Sym::T), Dim::constant(c.H), Dim::constant(c.D)}, DType::F32);
  auto k = b.input("k", Shape{Dim::symbol(Sym::T), Dim::constant(c.Hkv), Dim::constant(c.D)}, DType::F32);
  auto v = b.input("v", Shape{Dim::symbol(Sym::T), Dim::constant(c.Hkv), Dim::constant(c.D)}, DType::F32);
  auto p_in = b.input("pos", tok, DType::I32);
  auto seq_in = b.input("seq", tok, DType::I32);
  auto slots = b.input("slots", tok, DType::I32);
  auto table_in = b.input("table", graph::make_shape({n_seq, MB}), DType::I32);
  auto kc = b.state("kc", graph::make_shape({C, c.Hkv, c.D}), c.cache);
  auto vc = b.state("vc", graph::make_shape({C, c.Hkv, c.D}), c.cache);
  auto k2 = b.kv_write(kc, k, slots);
  auto v2 = b.kv_write(vc, v, slots);
  b.update_state(kc, k2);
  b.update_state(vc, v2);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.D));
  const graph::AttentionAttrs attrs{scale, Dim::symbol(Sym::S), c.window, c.softcap, B};
  std::optional<graph::Tensor> sinks;
  if (c.sinks) sinks = b.input("sinks", graph::make_shape({c.H}), DType::F32);
  b.output("o", b.attention(q, k2, v2, p_in, seq_in, table_in, attrs, sinks));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;

  test::GraphRun run;
  run.inputs["q"] = test::random_floats(static_cast<size_t>(c.T * c.H * c.D), 4);
  run.inputs["k"] = test::random_floats(static_cast<size_t>(c.T * c.Hkv * c.D), 5);
  run.inputs["v"] = test::random_floats(static_cast<size_t>(c.T * c.Hkv * c.D), 6);
  std::vector<int32_t> slot(static_cast<size_t>(c.T));
  for (int64_t t = 0; t < c.T; ++t)
    slot[static_cast<size_t>(t)] =
        static_cast<int32_t>(row(seq_of[static_cast<size_t>(t)], pos[static_cast<size_t>(t)]));
  run.inputs["pos"] = pos;
  run.inputs["seq"] = seq_of;
  run.inputs["slots"] = slot;
  run.inputs["table"] = table;
  if (c.sinks) run.inputs["sinks"] = test::random_floats(static_cast<size_t>(c.H), 9, 3.0f);
  const int64_t row_elems = c.Hkv * c.D;
  const size_t cache_elems = static_cast<size_t>(C * row_elems);
  std::vector<float> kcache(cache_elems, NAN), vcache(cache_elems, NAN);
  const std::vector<float> kr = test::random_floats(cache_elems, 7), vr = test::random_floats(cache_elems, 8);
  for (int64_t s = 0; s < n_seq; ++s)  // the cached prefix; new rows come from kv_write
    for (int64_t p = c.poison; p < c.past; ++p)
      for (int64_t i = 0; i < row_elems; ++i) {
        const auto at = static_cast<size_t>(row(s, p) * row_elems + i);
        kcache[at] = kr[at];
        vcache[at] = vr[at];
      }
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
  run.states["kc"] = kcache;
  run.states["vc"] = vcache;
  run.bind = testing::bindings(c.T, longest);
  const graph::Bindings max = testing::bindings(c.T + 3, MB * B);

  test::GraphRun want = run;
  auto st = testing::run_on(ref::RefBackend{}, *g, want, max);
  ASSERT_TRUE(st.ok()) << st.error().message;
  for (float x : want.outputs[0]) ASSERT_FALSE(std::isnan(x)) << "the ref read a row no query sees";
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
        // Sinks: prefill over several key blocks, split decode (merged partials), a window.
        Case{8, 2, 64, 150, 3, DType::F32, false, 0, 0.0f, 0, 3, false, 16, true},
        Case{8, 2, 64, 1, 1100, DType::F32, false, 0, 0.0f, 0, 3, false, 16, true},
        Case{8, 2, 64, 1, 200, DType::F16, false, 0, 0.0f, 0, 2, false, 16, true},
        Case{8, 2, 64, 30, 170, DType::F32, false, 24, 0.0f, 128, 3, false, 16, true},
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
             .softcap = 3.0f},
        // Block sizes other than 16: one row per block, blocks of 5 (key blocks cross them unevenly),
        // 64 and 128 (a key block inside one cache block); two sequences' prompt chunks in one step.
        Case{.H = 8, .Hkv = 2, .D = 32, .T = 9, .past = 30, .cache = DType::F32, .block_size = 1},
        Case{.H = 9, .Hkv = 3, .D = 64, .T = 70, .past = 64, .cache = DType::F16, .block_size = 5},
        Case{.H = 4, .Hkv = 1, .D = 64, .T = 1, .past = 1100, .cache = DType::F16, .block_size = 64},
        Case{.H = 8, .Hkv = 2, .D = 64, .T = 1, .past = 300, .cache = DType::F32, .block_size = 128},
        Case{.H = 8,
             .Hkv = 2,
             .D = 32,
             .T = 40,
             .past = 50,
             .cache = DType::F32,
             .seqs = true,
             .grouped = true},
        Case{.H = 9,
             .Hkv = 3,
             .D = 64,
             .T = 140,
             .past = 0,
             .cache = DType::F16,
             .seqs = true,
             .grouped = true,
             .block_size = 32},
        Case{.H = 8,
             .Hkv = 2,
             .D = 64,
             .T = 2,
             .past = 700,
             .cache = DType::F32,
             .seqs = true,
             .window = 100,
             .poison = 512}));

}  // namespace
}  // namespace glass::backend::cpu
