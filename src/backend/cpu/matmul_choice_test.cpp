#include "backend/cpu/matmul_choice.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/cpu_test_support.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_fused.h"

namespace glass::backend::cpu {
namespace {

using graph::DType;

// A one-weight matmul step of type t with the tier's file-layout kernel, over `w` (rows x k).
MatmulStep step_over(Isa isa, DType t, const std::vector<uint8_t>& w, int64_t rows, int64_t k,
                     bool fused = false) {
  MatmulStep m;
  const kernels::MatmulKernel* mk = kernels::best_matmul_kernel(isa, t);
  m.kernel =
      fused ? static_cast<const void*>(kernels::fused_matmul_kernel(isa, mk)) : static_cast<const void*>(mk);
  m.fused = fused;
  m.weights[0] = {w.data(), rows, k, t};
  return m;
}

// The decode strategy's kernel, with the weights repacked where it is a layout's; the file layout's
// under --no-repack, batch invariance (F16) or a weight that is not in the mapping.
TEST(MatmulChoice, TheStrategysKernelAndTheCopyItReads) {
  // The avx512 tier where the CPU runs it (Q6_K's sequential kernel is one of its rows), else avx2.
  const Isa isa = std::min(detect_isa(), Isa::Avx512);
  if (isa < Isa::Avx2 || kernels::matmul_rows(isa).empty())
    GTEST_SKIP() << "no x86 tier with repacked layouts";
  ThreadPool pool(2);
  WeightRepacks repacks;
  const int64_t rows = 64, k = 512;
  const std::vector<uint8_t> q4 = testing::random_weights(DType::Q4_0, rows, k, 5);
  const std::vector<uint8_t> q6 = testing::random_weights(DType::Q6_K, rows, k, 6);
  const std::vector<uint8_t> f16 = testing::random_weights(DType::F16, rows, k, 7);
  const MatmulChoiceContext spread{isa, DecodeStrategy::Spread, false, &repacks, &pool};

  // Q4_0 under spread: q4_0x16, reading the backend's copy.
  auto c = choose_matmul_kernel(step_over(isa, DType::Q4_0, q4, rows, k), spread, "matmul");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_NE(c->layout, nullptr);
  EXPECT_STREQ(c->layout, "q4_0x16");
  EXPECT_NE(c->weights[0], q4.data());
  EXPECT_EQ(repacks.find(q4.data()).data, c->weights[0]);
  EXPECT_EQ(c->kernel, kernels::repacked_matmul_kernel(isa, DType::Q4_0, DecodeStrategy::Spread));

  // Fused: the chosen layout's fused entry, the same copy.
  auto fused = choose_matmul_kernel(step_over(isa, DType::Q4_0, q4, rows, k, true), spread, "matmul_add");
  ASSERT_TRUE(fused.ok()) << fused.error().message;
  EXPECT_EQ(fused->weights[0], c->weights[0]);
  EXPECT_EQ(static_cast<const kernels::FusedMatmulKernel*>(fused->kernel)->mk, c->kernel);

  // Q6_K under sequential (AVX-512): its own file-layout kernel, no copy.
  if (isa == Isa::Avx512) {
    const MatmulChoiceContext sequential{isa, DecodeStrategy::Sequential, false, &repacks, &pool};
    auto seq = choose_matmul_kernel(step_over(isa, DType::Q6_K, q6, rows, k), sequential, "matmul");
    ASSERT_TRUE(seq.ok()) << seq.error().message;
    EXPECT_EQ(seq->layout, nullptr);
    EXPECT_EQ(seq->weights[0], q6.data());
    EXPECT_EQ(seq->kernel, kernels::decode_matmul_kernel(isa, DType::Q6_K, DecodeStrategy::Sequential));
    EXPECT_EQ(repacks.find(q6.data()).data, nullptr);
    auto sp = choose_matmul_kernel(step_over(isa, DType::Q6_K, q6, rows, k), spread, "matmul");
    ASSERT_TRUE(sp.ok()) << sp.error().message;
    ASSERT_NE(sp->layout, nullptr) << "spread reads Q6_K repacked";
    EXPECT_STREQ(sp->layout, "q6_kx16");
  }

  // --no-repack, batch invariance for F16, a weight outside the mapping: the step as it was.
  const MatmulChoiceContext no_repack{isa, DecodeStrategy::Spread, false, nullptr, &pool};
  const MatmulChoiceContext invariant{isa, DecodeStrategy::Spread, true, &repacks, &pool};
  MatmulStep computed = step_over(isa, DType::Q4_0, q4, rows, k);
  computed.weights[0].data = nullptr;
  for (const auto& [m, ctx] :
       {std::pair{step_over(isa, DType::Q4_0, q4, rows, k), no_repack},
        std::pair{step_over(isa, DType::F16, f16, rows, k), invariant}, std::pair{computed, spread}}) {
    auto same = choose_matmul_kernel(m, ctx, "matmul");
    ASSERT_TRUE(same.ok()) << same.error().message;
    EXPECT_EQ(same->kernel, m.kernel);
    EXPECT_EQ(same->weights[0], m.weights[0].data);
    EXPECT_EQ(same->layout, nullptr);
  }
}

}  // namespace
}  // namespace glass::backend::cpu
