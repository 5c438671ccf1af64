// cpu matmul at every ISA tier this machine runs, for every weight type, against two yardsticks:
//  * an emulation: the dequantized weights times the dequantized activation blocks the kernel
//    itself quantized, summed in double. The kernels' integer block sums are exact, so the only
//    differences are float rounding: tolerance 2e-5 of sum |w x| per output.
//  * the ref backend (f32 activations): NMSE below the activation rounding's size: 1e-10 for f32
//    weights, 1e-6 for f16, 2e-5 for bf16, 2e-4 for the 8-bit activation blocks.
// Shapes have tails: odd row counts, 1 and 3 activation rows (the decode split) and 70 (tiles);
// the float types also every decode row count, odd k and row counts 1-20 and 200.
#include "backend/cpu/kernels/matmul.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "backend/cpu/cpu_test_support.h"
#include "backend/cpu/kernel_table.h"
#include "backend/cpu/kernels/matmul_fused.h"
#include "backend/ref/ref_backend.h"
#include "formats/quant.h"
#include "formats/quantize.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::DType;
using kernels::ActQ8;
using kernels::ActQ8K;
using kernels::ActType;

// The activation values the kernel multiplies: its own quantization of x, dequantized.
std::vector<double> activation_values(const kernels::MatmulKernel& mk, const float* x, int64_t k) {
  std::vector<double> v(static_cast<size_t>(k));
  if (mk.quantize == nullptr) {
    for (int64_t i = 0; i < k; ++i) v[static_cast<size_t>(i)] = x[i];
    return v;
  }
  std::vector<std::byte> q(kernels::act_row_bytes(mk.act, k));
  mk.quantize(x, q.data(), k);
  for (int64_t i = 0; i < k; ++i) {
    const auto u = static_cast<size_t>(i);
    switch (mk.act) {
      case ActType::F16:
      case ActType::BF16:
        v[u] = reinterpret_cast<const float*>(q.data())[i];
        break;
      case ActType::BF16_BITS:
        v[u] = formats::bf16_to_f32(reinterpret_cast<const uint16_t*>(q.data())[i]);
        break;
      case ActType::Q8_0:
      case ActType::Q8_1: {
        const auto& b = reinterpret_cast<const ActQ8*>(q.data())[i / 32];
        v[u] = static_cast<double>(b.d) * b.qs[i % 32];
        break;
      }
      case ActType::Q8_K: {
        const auto& b = reinterpret_cast<const ActQ8K*>(q.data())[i / 256];
        v[u] = static_cast<double>(b.d) * b.qs[i % 256];
        break;
      }
      default:
        break;
    }
  }
  return v;
}

// q4_1 / q5_1 / q8_a add m * s per block, s = f16(d_exact * sum(q)); the dequantized product has
// m * d * sum(q). The difference, per block, so the emulation is exact for them too.
double min_term_correction(DType wt, const kernels::MatmulKernel& mk, const uint8_t* wrow, const float* x,
                           int64_t k) {
  if (mk.act != ActType::Q8_1) return 0.0;
  std::vector<ActQ8> q(static_cast<size_t>(k / 32));
  mk.quantize(x, q.data(), k);
  const size_t bb = static_cast<size_t>(graph::traits(wt).block_bytes);
  double c = 0;
  for (size_t b = 0; b < q.size(); ++b) {
    float m = 0;  // f16 after the f16 scale (q4_1, q5_1), f32 after the f32 scale (q8_a)
    if (wt == DType::Q8_A) {
      std::memcpy(&m, wrow + b * bb + 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, wrow + b * bb + 2, 2);
      m = formats::f16_to_f32(h);
    }
    c += static_cast<double>(m) * (static_cast<double>(q[b].s) - static_cast<double>(q[b].d) * q[b].sum);
  }
  return c;
}

struct Case {
  DType weight;
  int64_t M, N, K;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << graph::dtype_name(c.weight) << " M=" << c.M << " N=" << c.N << " K=" << c.K;
}

// Every runnable tier's matmul of x (M x K) with the weights (N rows of K, stored as c.weight)
// against the emulation and the ref backend.
void expect_matches(const Case& c, const std::vector<uint8_t>& wdata, const std::vector<float>& xs) {
  graph::Builder b;
  auto x =
      b.input("x", graph::Shape{graph::Dim::symbol(graph::Sym::T), graph::Dim::constant(c.K)}, DType::F32);
  auto w = b.parameter("w", graph::make_shape({c.N, c.K}), c.weight);
  b.output("y", b.matmul(x, w));
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.error().message;
  const std::map<std::string, const void*> weights{{"w", wdata.data()}};
  test::GraphRun run;
  run.inputs["x"] = xs;
  run.bind = testing::bindings(c.M, 0);

  test::GraphRun want = run;
  ASSERT_TRUE(testing::run_on(ref::RefBackend{}, *g, want, testing::bindings(c.M, 0), weights).ok());
  const size_t row_bytes = *graph::dtype_bytes(c.weight, static_cast<uint64_t>(c.K));
  std::vector<float> wrow(static_cast<size_t>(c.K));
  const double ref_tol = c.weight == DType::F32    ? 1e-10
                         : c.weight == DType::F16  ? 1e-6
                         : c.weight == DType::BF16 ? 2e-5
                                                   : 2e-4;

  for (Isa isa : testing::runnable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    CpuBackend cpu({3, isa});
    auto choice = choose_kernel(*g, g->nodes.back(), {isa, DecodeStrategy::Spread, false, false});
    ASSERT_TRUE(choice.ok()) << choice.error().message;
    const auto& mk = data_of<kernels::MatmulKernel>(choice->base);  // the activations every row reads
    test::GraphRun got = run;
    auto st = testing::run_on(cpu, *g, got, testing::bindings(c.M + 5, 0), weights);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ASSERT_EQ(got.outputs[0].size(), static_cast<size_t>(c.M * c.N));
    for (int64_t m = 0; m < c.M; ++m) {
      const std::vector<double> a = activation_values(mk, xs.data() + m * c.K, c.K);
      for (int64_t n = 0; n < c.N; ++n) {
        ASSERT_TRUE(formats::dequantize_row(c.weight, wdata.data() + static_cast<size_t>(n) * row_bytes,
                                            wrow.data(), c.K)
                        .ok());
        double dot = 0, mag = 0;
        for (int64_t i = 0; i < c.K; ++i) {
          dot += wrow[static_cast<size_t>(i)] * a[static_cast<size_t>(i)];
          mag += std::fabs(wrow[static_cast<size_t>(i)] * a[static_cast<size_t>(i)]);
        }
        dot += min_term_correction(c.weight, mk, wdata.data() + static_cast<size_t>(n) * row_bytes,
                                   xs.data() + m * c.K, c.K);
        ASSERT_NEAR(got.outputs[0][static_cast<size_t>(m * c.N + n)], dot, 2e-5 * mag + 1e-6)
            << "m=" << m << " n=" << n;
      }
    }
    EXPECT_LE(testing::nmse(got.outputs[0], want.outputs[0]), ref_tol);
  }
}

class CpuMatmul : public ::testing::TestWithParam<Case> {};

TEST_P(CpuMatmul, MatchesEmulationAndRef) {
  const Case c = GetParam();
  expect_matches(c, testing::random_weights(c.weight, c.N, c.K, 11),
                 test::random_floats(static_cast<size_t>(c.M * c.K), 12));
}

// The integer sums at their largest: every weight of a block but the first quantizes to the type's
// largest unsigned value (the first, -1, sets the scale), and every activation to +127, so each
// product is as large as the type allows. Kernels without VNNI add products in int16 (maddubs)
// and must not saturate there.
TEST(CpuMatmulExtremes, LargestQuantsDoNotSaturate) {
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_A, DType::IQ4_NL, DType::IQ4_XS}) {
    const int64_t bs = graph::traits(t).block_size;
    for (int64_t M : {1, 3, 20}) {
      const Case c{t, M, 37, 2 * bs};
      SCOPED_TRACE(::testing::PrintToString(c));
      std::vector<float> w(static_cast<size_t>(c.N * c.K), 1.0f);
      for (size_t i = 0; i < w.size(); i += static_cast<size_t>(bs)) w[i] = -1.0f;
      std::vector<uint8_t> wdata(*graph::dtype_bytes(t, w.size()));
      ASSERT_TRUE(formats::quantize_row(t, w.data(), wdata.data(), static_cast<int64_t>(w.size())).ok());
      expect_matches(c, wdata, std::vector<float>(static_cast<size_t>(M * c.K), 1.0f));
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_A,
                  DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS}) {
    const int64_t K =
        graph::traits(t).block_size == 256 ? 512 : (graph::traits(t).block_size == 32 ? 96 : 67);
    for (int64_t M : {1, 3, 70}) v.push_back({t, M, M == 70 ? 133 : 37, K});
  }
  // f32 / f16 / bf16: every decode row count (1-4) and the tile sizes around them, with row counts
  // that leave each register-tile tail (16, 8, 4 and 1-3 rows) and odd k (masked k tails).
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t M : {2, 4, 5, 7, 12, 17, 20}) v.push_back({t, M, 39, 67});
    v.push_back({t, 1, 45, 131});
    v.push_back({t, 1, 3, 16});
    v.push_back({t, 2, 21, 1});
    v.push_back({t, 200, 29, 45});
  }
  // F16 repacked in k-major 16-row groups: the decode path's four groups at a time plus one; the
  // prefill's four-group tiles (AVX-512; one group with AVX2) of 6 rows, then pairs and one group
  // (12- and 24-row tiles), every kind of rest, and a row tail.
  for (DType t : {DType::F16, DType::BF16}) {  // and BF16 in the same groups (bf16x16)
    for (int64_t M : {1, 2, 3, 4}) v.push_back({t, M, 80, 67});
    for (int64_t M : {5, 13, 25, 35}) v.push_back({t, M, 48, 33});
    for (int64_t M : {6, 11, 16, 35}) v.push_back({t, M, 16 * 7 + 3, 33});
    v.push_back({t, 24, 70, 67});
  }
  v.push_back({DType::Q4_0, 2, 1, 32});
  // Q4_0 repacked in 16-row groups (AVX-512 VNNI): whole groups only, at the decode (M <= 4), tile
  // and packed (M >= 16) paths, and groups plus a tail.
  for (int64_t M : {1, 4, 5, 17}) v.push_back({DType::Q4_0, M, 48, 160});
  v.push_back({DType::Q4_0, 20, 70, 64});
  // The decode split of 97 groups and a 5-row tail: on 3 threads tasks of 33 groups (four-group
  // lockstep, then a single group), the last one 31 groups and the tail.
  v.push_back({DType::Q4_0, 1, 16 * 97 + 5, 64});
  v.push_back({DType::Q8_0, 1, 16 * 97 + 5, 64});
  for (DType t : {DType::Q4_K, DType::Q5_K})  // q4_kx16 and q5_kx16 likewise
    for (int64_t M : {1, 2, 5, 17}) v.push_back({t, M, 48, 512});
  v.push_back({DType::Q5_K, 1, 16 * 9 + 7, 256});
  for (int64_t M : {1, 4, 5, 17}) v.push_back({DType::Q8_0, M, 48, 160});  // and q8_0x16
  for (DType t : {DType::Q6_K, DType::Q3_K, DType::Q2_K})                  // and q6_kx16, q3_kx16 and q2_kx16
    for (int64_t M : {1, 2, 3, 17}) v.push_back({t, M, 64, 512});
  v.push_back({DType::Q3_K, 1, 16 * 7 + 9, 256});
  v.push_back({DType::Q2_K, 1, 16 * 7 + 9, 256});
  for (DType t : {DType::Q5_0, DType::Q5_1, DType::Q4_1}) {  // q5_0x16, q5_1x16, q4_1x16: tails, split
    for (int64_t M : {1, 4, 5, 17}) v.push_back({t, M, 48, 160});
    v.push_back({t, 1, 16 * 97 + 5, 64});
    v.push_back({t, 20, 70, 96});
  }
  v.push_back({DType::Q6_K, 1, 16 * 5 + 3, 256});
  for (int64_t M : {2, 4, 17}) v.push_back({DType::Q8_A, M, 45, 160});  // Q8_A: decode rows, the packed path
  v.push_back({DType::Q8_0, 3, 70, 64});
  v.push_back({DType::Q4_K, 5, 9, 256});
  for (int64_t M : {2, 4, 17}) {  // the i-quants: decode rows, tiles and the packed path
    v.push_back({DType::IQ4_NL, M, 45, 160});
    v.push_back({DType::IQ4_XS, M, 45, 768});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, CpuMatmul, ::testing::ValuesIn(cases()));

// Decode tasks: a share of the weight rows per thread, 64 rows at least; in units of the layout's
// row groups.
TEST(CpuMatmulDecodeSplit, OneTaskPerThreadOfAtLeastFourGroups) {
  using kernels::decode_task_units;
  EXPECT_EQ(decode_task_units(36, 16, 2), 18);      // 576 rows in 16-row groups, 2 threads: a half each
  EXPECT_EQ(decode_task_units(3072, 16, 2), 1536);  // an LM head likewise
  EXPECT_EQ(decode_task_units(37, 16, 2), 19);      // an odd count: the last task one group short
  EXPECT_EQ(decode_task_units(12, 16, 16), 4);      // many threads: 64 rows, no less
  EXPECT_EQ(decode_task_units(576, 1, 3), 192);     // row-major kernels count rows
  EXPECT_EQ(decode_task_units(100, 1, 4), 64);
}

// Each repacked layout gives back every row of the matrix it was made from, byte for byte: rows of
// full 16-row groups and of the row-major tail.
// Layouts per tier: every quantized type, F16 and BF16 with AVX-512 (BF16 in pairs with avx512bf16);
// F16, BF16, Q4_0, Q4_1, Q5_0 and Q5_1 with AVX2. F16 and BF16 also at an odd k (the pair layout's
// last element).
TEST(CpuMatmulRepack, UnpackRowGivesBackEachRowOfTheFile) {
  for (Isa isa : testing::runnable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    size_t layouts = 0;
    for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                    DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      const kernels::MatmulKernel* repacked = kernels::repacked_matmul_kernel(isa, t, DecodeStrategy::Spread);
      if (repacked == nullptr) continue;
      const kernels::MatmulKernel& rk = *repacked;
      ASSERT_NE(rk.unpack_row, nullptr) << rk.layout;
      ++layouts;
      const int64_t bs = graph::traits(t).block_size, rows = 16 * 3 + 5,
                    k = bs == 256 ? 512
                        : bs == 1 ? 67
                                  : 96;
      const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 17);
      const size_t row_bytes = w.size() / static_cast<size_t>(rows);
      std::vector<std::byte> packed(w.size()), row(row_bytes);
      rk.repack(reinterpret_cast<const std::byte*>(w.data()), packed.data(), rows, k);
      ASSERT_NE(std::memcmp(packed.data(), w.data(), 16 * row_bytes), 0) << rk.layout << ": not reordered";
      for (int64_t r = 0; r < rows; ++r) {
        rk.unpack_row(packed.data(), rows, k, r, row.data());
        EXPECT_EQ(std::memcmp(row.data(), w.data() + static_cast<size_t>(r) * row_bytes, row_bytes), 0)
            << rk.layout << " row " << r;
      }
    }
    EXPECT_EQ(layouts, isa >= Isa::Avx512 ? 12u : isa == Isa::Avx2 ? 6u : 0u);
  }
}

// A decode walk over the groups of several matrices (a layer's q, k and v as one list) gives each
// row the bits the matrix's own decode gives it, over ranges of the list that cross the matrices'
// boundaries.
TEST(CpuMatmulRepack, GroupsOfSeveralMatricesAsOneList) {
  for (Isa isa : testing::runnable_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    size_t walks = 0;
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                    DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      const kernels::MatmulKernel* repacked = kernels::repacked_matmul_kernel(isa, t, DecodeStrategy::Spread);
      if (repacked == nullptr) continue;
      const kernels::MatmulKernel& rk = *repacked;
      ASSERT_NE(rk.gemv_parts, nullptr) << rk.layout;
      ++walks;
      const int64_t k = graph::traits(t).block_size == 256 ? 512 : 96;
      const std::array<int64_t, 3> rows = {48, 16, 80};  // 3, 1 and 5 groups
      kernels::GemvParts gp;
      gp.n = rows.size();
      std::vector<std::vector<std::byte>> packed;
      std::vector<std::vector<float>> want, got;
      const std::vector<float> x = test::random_floats(static_cast<size_t>(k), 31);
      std::vector<std::byte> act(kernels::act_row_bytes(rk.act, k));
      rk.quantize(x.data(), act.data(), k);
      for (size_t p = 0; p < rows.size(); ++p) {
        const std::vector<uint8_t> w = testing::random_weights(t, rows[p], k, 40 + static_cast<uint32_t>(p));
        const size_t row_bytes = w.size() / static_cast<size_t>(rows[p]);
        packed.emplace_back(w.size());
        rk.repack(reinterpret_cast<const std::byte*>(w.data()), packed.back().data(), rows[p], k);
        want.emplace_back(static_cast<size_t>(rows[p]));
        got.emplace_back(static_cast<size_t>(rows[p]), -1.0f);
        rk.gemm(k, packed.back().data(), row_bytes, rows[p], act.data(), act.size(), 1, want.back().data(),
                static_cast<size_t>(rows[p]));
        gp.group_bytes = 16 * row_bytes;
        gp.w[p] = packed.back().data();
        gp.out[p] = got.back().data();
        gp.start[p + 1] = gp.start[p] + rows[p] / 16;
      }
      for (auto [g0, g1] : {std::pair<int64_t, int64_t>{0, 2}, {2, 5}, {5, 9}})
        rk.gemv_parts(k, gp, g0, g1, act.data());
      for (size_t p = 0; p < rows.size(); ++p)
        EXPECT_EQ(std::memcmp(got[p].data(), want[p].data(), want[p].size() * sizeof(float)), 0)
            << rk.layout << " matrix " << p;
    }
    EXPECT_EQ(walks, isa >= Isa::Avx512 ? 10u : isa == Isa::Avx2 ? 4u : 0u);
  }
}

// Every decode strategy (isa.h) gives the same bits for every repacked layout it walks: one
// activation row (the decode walk: a lockstep quarter or one group at a time, the groups left and the
// row-major tail), three (the tile walk, prefetched from another distance) and the multi-matrix walk
// over ranges that are not a multiple of four groups. On every tier this CPU runs.
TEST(CpuMatmulRepack, EveryDecodeStrategyGivesTheSameBits) {
  size_t variants = 0, expected = 0;
  for (const Isa isa : {Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (isa > detect_isa()) continue;
    // AVX-512: five k-quant lockstep walks, two k-quant (Q4_K, Q5_K) and five legacy sequential ones,
    // f16x16's and the BF16 layout's (bf16x16, or bf16x16p on the avx512bf16 tier); AVX2: four legacy
    // sequential walks, f16x16's and bf16x16's.
    expected += isa == Isa::Avx2 ? 6u : 14u;
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                    DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F16, DType::BF16}) {
      const kernels::MatmulKernel* spread = kernels::repacked_matmul_kernel(isa, t, DecodeStrategy::Spread);
      if (spread == nullptr) continue;
      for (const DecodeStrategy strategy : {DecodeStrategy::Lockstep, DecodeStrategy::Sequential}) {
        const kernels::MatmulKernel* other = kernels::repacked_matmul_kernel(isa, t, strategy);
        if (other == nullptr || other == spread) continue;  // the file's layout, or the same walk
        ++variants;
        SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(spread->layout) + " " +
                     std::string(decode_strategy_name(strategy)));
        EXPECT_STREQ(other->layout, spread->layout);
        EXPECT_EQ(other->repack, spread->repack) << "one copy serves every walk";
        const int64_t rows = 16 * 9 + 5, k = 768;
        const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 23);
        const size_t row_bytes = w.size() / static_cast<size_t>(rows);
        std::vector<std::byte> packed(w.size());
        spread->repack(reinterpret_cast<const std::byte*>(w.data()), packed.data(), rows, k);
        for (const int64_t n_a : {1, 2, 3, 4, 6}) {
          const std::vector<float> x = test::random_floats(static_cast<size_t>(n_a * k), 37);
          const size_t a_stride = kernels::act_row_bytes(spread->act, k);
          std::vector<std::byte> act(a_stride * static_cast<size_t>(n_a));
          for (int64_t i = 0; i < n_a; ++i)
            spread->quantize(x.data() + i * k, act.data() + static_cast<size_t>(i) * a_stride, k);
          std::vector<float> want(static_cast<size_t>(n_a * rows)), got(want.size(), -1.0f);
          spread->gemm(k, packed.data(), row_bytes, rows, act.data(), a_stride, n_a, want.data(),
                       static_cast<size_t>(rows));
          other->gemm(k, packed.data(), row_bytes, rows, act.data(), a_stride, n_a, got.data(),
                      static_cast<size_t>(rows));
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
              << n_a << " activation rows";
          if (n_a != 1 || other->gemv_parts == nullptr) continue;
          kernels::GemvParts gp;
          gp.n = 1;
          gp.group_bytes = 16 * row_bytes;
          gp.w[0] = packed.data();
          std::vector<float> parts(want.size(), -1.0f);
          gp.out[0] = parts.data();
          gp.start[1] = rows / 16;
          for (auto [g0, g1] : {std::pair<int64_t, int64_t>{0, 3}, {3, 9}})
            other->gemv_parts(k, gp, g0, g1, act.data());
          EXPECT_EQ(
              std::memcmp(parts.data(), want.data(), static_cast<size_t>(rows / 16 * 16) * sizeof(float)), 0)
              << "the multi-matrix walk";
        }
      }
    }
  }
  EXPECT_EQ(variants, expected);
}

// The Sequential strategy's f32 kernel reads one row at a time where the default reads groups of
// rows: the same bits, k tails (masked loads) and row tails included, and other activation counts
// as the default's.
TEST(CpuMatmulRepack, SequentialF32RowsGiveTheGroupedBits) {
  const kernels::MatmulKernel* seq =
      kernels::decode_matmul_kernel(detect_isa(), DType::F32, DecodeStrategy::Sequential);
  const kernels::MatmulKernel* plain = kernels::best_matmul_kernel(detect_isa(), DType::F32);
  if (detect_isa() < Isa::Avx2) {
    EXPECT_EQ(seq, nullptr);  // scalar: one f32 kernel
    GTEST_SKIP() << "the sequential f32 kernel is the x86 tiers'";
  }
  for (const Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (isa > detect_isa()) continue;
    SCOPED_TRACE(std::string(isa_name(isa)));
    seq = kernels::decode_matmul_kernel(isa, DType::F32, DecodeStrategy::Sequential);
    plain = kernels::best_matmul_kernel(isa, DType::F32);
    ASSERT_NE(seq, nullptr);
    ASSERT_NE(seq, plain);
    EXPECT_EQ(seq->repack, nullptr);
    for (const int64_t k : {576, 583, 9}) {
      const int64_t rows = 16 * 3 + 8 + 3;  // the default's 16-, 8- and 1-3-row groups
      const std::vector<float> w = test::random_floats(static_cast<size_t>(rows * k), 5);
      for (const int64_t n_a : {1, 2, 5}) {
        const std::vector<float> x = test::random_floats(static_cast<size_t>(n_a * k), 7);
        std::vector<float> want(static_cast<size_t>(n_a * rows)), got(want.size(), -1.0f);
        const auto* wb = reinterpret_cast<const std::byte*>(w.data());
        const auto* xb = reinterpret_cast<const std::byte*>(x.data());
        const size_t stride = static_cast<size_t>(k) * sizeof(float);
        plain->gemm(k, wb, stride, rows, xb, stride, n_a, want.data(), static_cast<size_t>(rows));
        seq->gemm(k, wb, stride, rows, xb, stride, n_a, got.data(), static_cast<size_t>(rows));
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
            << "k " << k << ", " << n_a << " activation rows";
      }
    }
  }
}

// A batched decode step (one activation row per sequence, up to kSmallM) computes each row as that
// row alone would, bit for bit, for every repacked layout under both strategies, across many groups
// (the rows past the last group go through the row-major kernel, whose one-row path sums in another
// order from four rows on: not compared). A decode walk over several rows must keep this.
TEST(CpuMatmulRepack, BatchedDecodeRowsEqualEachRowAlone) {
  size_t checked = 0;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q2_K, DType::Q3_K,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (const DecodeStrategy strategy :
         {DecodeStrategy::Spread, DecodeStrategy::Lockstep, DecodeStrategy::Sequential}) {
      const kernels::MatmulKernel* mk = kernels::repacked_matmul_kernel(detect_isa(), t, strategy);
      if (mk == nullptr || mk->quantize == nullptr) continue;
      const int64_t rows = 16 * 13 + 7, k = 512;
      const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 29);
      const size_t row_bytes = w.size() / static_cast<size_t>(rows);
      std::vector<std::byte> packed(w.size());
      mk->repack(reinterpret_cast<const std::byte*>(w.data()), packed.data(), rows, k);
      const size_t a_stride = kernels::act_row_bytes(mk->act, k);
      for (int64_t n_a = 2; n_a <= 4; ++n_a) {
        const std::vector<float> x = test::random_floats(static_cast<size_t>(n_a * k), 41 + n_a);
        std::vector<std::byte> act(a_stride * static_cast<size_t>(n_a));
        for (int64_t i = 0; i < n_a; ++i)
          mk->quantize(x.data() + i * k, act.data() + static_cast<size_t>(i) * a_stride, k);
        std::vector<float> together(static_cast<size_t>(n_a * rows), -1.0f);
        mk->gemm(k, packed.data(), row_bytes, rows, act.data(), a_stride, n_a, together.data(),
                 static_cast<size_t>(rows));
        for (int64_t i = 0; i < n_a; ++i) {
          std::vector<float> alone(static_cast<size_t>(rows), -2.0f);
          mk->gemm(k, packed.data(), row_bytes, rows, act.data() + static_cast<size_t>(i) * a_stride,
                   a_stride, 1, alone.data(), static_cast<size_t>(rows));
          const size_t grouped = static_cast<size_t>(rows / 16 * 16);
          EXPECT_EQ(std::memcmp(together.data() + i * rows, alone.data(), grouped * sizeof(float)), 0)
              << mk->layout << " " << decode_strategy_name(strategy) << ": row " << i << " of " << n_a;
        }
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 3u * 5u);
}

// The k-quant kernels in the file's layout (the Sequential strategy's Q6_K, and every k-quant under
// --no-repack) serve a batched decode in tiles of 8 (AVX-512), then 4 activation rows, then one: each row
// comes out as that row alone, bit for bit, whatever tile it fell in.
TEST(CpuMatmulRepack, FileLayoutKQuantRowsInAnyTileEqualEachRowAlone) {
  size_t checked = 0;
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const kernels::MatmulKernel* mk = kernels::best_matmul_kernel(detect_isa(), t);
    ASSERT_NE(mk, nullptr);
    const int64_t rows = 7, k = 512;
    const std::vector<uint8_t> w = testing::random_weights(t, rows, k, 31);
    const size_t row_bytes = w.size() / static_cast<size_t>(rows);
    const size_t a_stride = kernels::act_row_bytes(mk->act, k);
    for (const int64_t n_a : {5, 8, 13, 17}) {
      const std::vector<float> x = test::random_floats(static_cast<size_t>(n_a * k), 43 + n_a);
      std::vector<std::byte> act(a_stride * static_cast<size_t>(n_a));
      for (int64_t i = 0; i < n_a; ++i)
        mk->quantize(x.data() + i * k, act.data() + static_cast<size_t>(i) * a_stride, k);
      std::vector<float> together(static_cast<size_t>(n_a * rows), -1.0f);
      mk->gemm(k, reinterpret_cast<const std::byte*>(w.data()), row_bytes, rows, act.data(), a_stride, n_a,
               together.data(), static_cast<size_t>(rows));
      for (int64_t i = 0; i < n_a; ++i) {
        std::vector<float> alone(static_cast<size_t>(rows), -2.0f);
        mk->gemm(k, reinterpret_cast<const std::byte*>(w.data()), row_bytes, rows,
                 act.data() + static_cast<size_t>(i) * a_stride, a_stride, 1, alone.data(),
                 static_cast<size_t>(rows));
        EXPECT_EQ(std::memcmp(together.data() + i * rows, alone.data(), alone.size() * sizeof(float)), 0)
            << graph::dtype_name(t) << ": row " << i << " of " << n_a;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5u * 4u);
}

// The matmul table (matmul.h): every tier has one default file-layout kernel for each weight type it
// lists; a type's rows that name strategies name each at most once; every strategy resolves to one
// kernel per type, and the repacked ones to one layout and one repack (a copy serves every walk);
// every row has its fused kernel.
TEST(CpuMatmulTable, OneRowPerWeightLayoutAndWalk) {
  constexpr DecodeStrategy kStrategies[] = {DecodeStrategy::Spread, DecodeStrategy::Lockstep,
                                            DecodeStrategy::Sequential};
  for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    const std::span<const kernels::MatmulRow> rows = kernels::matmul_rows(isa);
    size_t file = 0;
    std::map<DType, kernels::Walks> named;
    for (const kernels::MatmulRow& r : rows) {
      const DType w = r.kernel->weight;
      EXPECT_NE(kernels::fused_matmul_kernel(isa, r.kernel), nullptr) << graph::dtype_name(w);
      EXPECT_NE(r.walks, 0) << graph::dtype_name(w);
      if (r.walks != kernels::kEveryWalk) {
        EXPECT_EQ(named[w] & r.walks, 0) << graph::dtype_name(w) << ": a strategy named twice";
        named[w] |= r.walks;
      }
      if (r.kernel->repack == nullptr && r.walks == kernels::kEveryWalk) {
        ++file;
        EXPECT_EQ(kernels::matmul_kernel_for(isa, w), r.kernel) << graph::dtype_name(w);
        continue;
      }
      EXPECT_NE(kernels::matmul_kernel_for(isa, w), nullptr)
          << graph::dtype_name(w) << " without a file layout";
      for (const DecodeStrategy s : kStrategies) {
        if (r.walks != kernels::kEveryWalk && (r.walks & kernels::walks_of(s)) == 0) continue;
        const kernels::MatmulKernel* got = kernels::decode_matmul_kernel(isa, w, s);
        ASSERT_NE(got, nullptr) << graph::dtype_name(w);
        if (r.walks != kernels::kEveryWalk) {
          EXPECT_EQ(got, r.kernel) << graph::dtype_name(w);
        }
      }
    }
    for (const auto& [w, walks] : named) {
      const kernels::MatmulKernel* layout = nullptr;
      for (const DecodeStrategy s : kStrategies) {
        const kernels::MatmulKernel* k = kernels::repacked_matmul_kernel(isa, w, s);
        if (k == nullptr) continue;
        if (layout == nullptr) layout = k;
        EXPECT_STREQ(k->layout, layout->layout) << graph::dtype_name(w);
        EXPECT_EQ(k->repack, layout->repack) << graph::dtype_name(w);
      }
    }
    // The scalar tier has all 17 weight types; an x86 build's tiers too (other builds: none), but
    // avx512bf16, which adds bf16 to the avx512 tier's.
    if (isa == Isa::Scalar || !rows.empty()) {
      EXPECT_EQ(file, isa == Isa::Avx512Bf16 ? 1u : 17u);
    }
    EXPECT_EQ(kernels::fused_matmul_kernel(isa, nullptr), nullptr);
  }
  // Sequential keeps Q6_K in the file's layout on the AVX-512 tiers, and walks Q4_0 one group at a time.
  if (!kernels::matmul_rows(Isa::Avx512).empty()) {
    EXPECT_EQ(kernels::decode_matmul_kernel(Isa::Avx512, DType::Q6_K, DecodeStrategy::Sequential),
              kernels::matmul_kernel_for(Isa::Avx512, DType::Q6_K));
    EXPECT_EQ(kernels::repacked_matmul_kernel(Isa::Avx512Bf16, DType::Q6_K, DecodeStrategy::Sequential),
              nullptr);
    EXPECT_STREQ(kernels::repacked_matmul_kernel(Isa::Avx512, DType::Q6_K, DecodeStrategy::Spread)->layout,
                 "q6_kx16");
    EXPECT_NE(kernels::repacked_matmul_kernel(Isa::Avx512, DType::Q4_0, DecodeStrategy::Sequential),
              kernels::repacked_matmul_kernel(Isa::Avx512, DType::Q4_0, DecodeStrategy::Spread));
  }
  // The best tier up to an ISA: scalar below AVX2.
  EXPECT_EQ(kernels::best_matmul_kernel(Isa::Scalar, DType::Q4_K),
            kernels::matmul_kernel_for(Isa::Scalar, DType::Q4_K));
  EXPECT_EQ(kernels::best_matmul_kernel(Isa::Scalar, DType::I32), nullptr);
  EXPECT_EQ(kernels::repacked_matmul_kernel(Isa::Scalar, DType::Q4_0, DecodeStrategy::Lockstep), nullptr);
  // avx512bf16: its own bf16 kernels, the avx512 tier's for the rest.
  if (!kernels::matmul_rows(Isa::Avx512Bf16).empty()) {
    EXPECT_EQ(kernels::best_matmul_kernel(Isa::Avx512Bf16, DType::Q4_K),
              kernels::matmul_kernel_for(Isa::Avx512, DType::Q4_K));
    EXPECT_EQ(kernels::repacked_matmul_kernel(Isa::Avx512Bf16, DType::Q4_K, DecodeStrategy::Lockstep),
              kernels::repacked_matmul_kernel(Isa::Avx512, DType::Q4_K, DecodeStrategy::Lockstep));
    EXPECT_STREQ(
        kernels::repacked_matmul_kernel(Isa::Avx512Bf16, DType::BF16, DecodeStrategy::Spread)->layout,
        "bf16x16p");
  }
}

// Every tier's activation converter writes the scalar one's bytes (ties and zero blocks included).
TEST(CpuMatmulActivations, EveryTierConvertsBitExactly) {
  const int64_t k = 512;
  std::vector<float> x = test::random_floats(static_cast<size_t>(k), 21, 3.0f);
  for (size_t i = 0; i < 64; ++i) x[i] = static_cast<float>(static_cast<int>(i % 9) - 4) * 0.25f;  // ties
  for (size_t i = 256; i < 288; ++i) x[i] = 0.0f;  // a zero block
  for (DType t : {DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q4_K}) {
    const kernels::MatmulKernel* ref = kernels::matmul_kernel_for(Isa::Scalar, t);
    for (Isa isa : testing::runnable_isas()) {
      const kernels::MatmulKernel* mk = kernels::best_matmul_kernel(isa, t);
      ASSERT_NE(mk, nullptr);
      std::vector<std::byte> got(kernels::act_row_bytes(mk->act, k)),
          want(kernels::act_row_bytes(ref->act, k));
      mk->quantize(x.data(), got.data(), k);
      ref->quantize(x.data(), want.data(), k);
      if (mk->act == ActType::BF16_BITS) {  // the bit patterns of the scalar converter's bf16 values
        for (int64_t i = 0; i < k; ++i) {
          uint32_t bits;
          std::memcpy(&bits, want.data() + 4 * i, 4);
          uint16_t half;
          std::memcpy(&half, got.data() + 2 * i, 2);
          ASSERT_EQ(half, bits >> 16) << isa_name(isa) << " element " << i;
        }
        continue;
      }
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
          << graph::dtype_name(t) << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace glass::backend::cpu
