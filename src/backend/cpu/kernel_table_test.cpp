// The kernel table's one answer per node: the entry of the best tier, and for a matmul the row its
// decode strategy reads (repacked, or another file-layout walk) and that row's fused entry; the file
// layout wherever a copy cannot or must not be made.
#include "backend/cpu/kernel_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backend/cpu/cpu_test_support.h"
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/matmul_fused.h"
#include "graph/builder.h"

namespace glass::backend::cpu {
namespace {

using graph::Dim;
using graph::DType;
using graph::Op;
using graph::Shape;

constexpr int64_t kRows = 64, kK = 512;

// y = x @ w (a parameter of type t, or an input: computed, nothing to copy), optionally + r as one
// fused matmul_add node.
graph::Graph matmul_graph(DType t, bool fused = false, bool weight_is_parameter = true) {
  graph::Builder b;
  const Shape x_shape{Dim::symbol(graph::Sym::T), Dim::constant(kK)};
  const auto x = b.input("x", x_shape, DType::F32);
  const Shape w_shape{Dim::constant(kRows), Dim::constant(kK)};
  const auto w = weight_is_parameter ? b.parameter("w", w_shape, t) : b.input("w", w_shape, t);
  if (fused) {
    const auto r = b.input("r", Shape{Dim::symbol(graph::Sym::T), Dim::constant(kRows)}, DType::F32);
    b.output("y", b.add_node(Op::MatMulAdd, {x.id, w.id, r.id}, graph::NoAttrs{}));
  } else {
    b.output("y", b.matmul(x, w));
  }
  auto g = b.finish();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::move(*g) : graph::Graph{};
}

Result<KernelChoice> choose(const graph::Graph& g, const KernelQuery& q) {
  for (const graph::Node& n : g.nodes)
    if (n.op == Op::MatMul || n.op == Op::MatMulAdd) return choose_kernel(g, n, q);
  return make_error(ErrorCode::Internal, "no matmul");
}

TEST(KernelTable, AMatmulRunsItsDecodeStrategysRow) {
  // The avx512 tier where the CPU runs it (Q6_K's sequential kernel is one of its rows), else avx2.
  const Isa isa = std::min(detect_isa(), Isa::Avx512);
  if (isa < Isa::Avx2 || kernels::matmul_rows(isa).empty())
    GTEST_SKIP() << "no x86 tier with repacked layouts";
  const KernelQuery spread{isa, DecodeStrategy::Spread, true, false};

  // Q4_0 under spread: q4_0x16, to be read from the backend's copy; the scratch and the activations'
  // conversion stay the file layout's entry's.
  auto c = choose(matmul_graph(DType::Q4_0), spread);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const kernels::MatmulKernel* q4x16 =
      kernels::repacked_matmul_kernel(isa, DType::Q4_0, DecodeStrategy::Spread);
  ASSERT_NE(q4x16, nullptr);
  EXPECT_EQ(c->repack, q4x16);
  EXPECT_STREQ(c->repack->layout, "q4_0x16");
  EXPECT_EQ(&data_of<kernels::MatmulKernel>(c->data), q4x16);
  EXPECT_EQ(&data_of<kernels::MatmulKernel>(c->base), kernels::best_matmul_kernel(isa, DType::Q4_0));

  // Fused: the chosen row's fused entry, the same layout.
  auto fused = choose(matmul_graph(DType::Q4_0, true), spread);
  ASSERT_TRUE(fused.ok()) << fused.error().message;
  EXPECT_EQ(fused->repack, q4x16);
  EXPECT_EQ(data_of<kernels::FusedMatmulKernel>(fused->data).mk, q4x16);

  // Q6_K under sequential (AVX-512): its own file-layout kernel, no copy; under spread, q6_kx16.
  if (isa == Isa::Avx512) {
    auto seq = choose(matmul_graph(DType::Q6_K), {isa, DecodeStrategy::Sequential, true, false});
    ASSERT_TRUE(seq.ok()) << seq.error().message;
    EXPECT_EQ(seq->repack, nullptr);
    EXPECT_EQ(&data_of<kernels::MatmulKernel>(seq->data),
              kernels::decode_matmul_kernel(isa, DType::Q6_K, DecodeStrategy::Sequential));
    auto sp = choose(matmul_graph(DType::Q6_K), spread);
    ASSERT_TRUE(sp.ok()) << sp.error().message;
    ASSERT_NE(sp->repack, nullptr) << "spread reads Q6_K repacked";
    EXPECT_STREQ(sp->repack->layout, "q6_kx16");
  }

  // --no-repack, batch invariance for F16, a weight that is not a parameter: the file layout.
  const KernelQuery no_repack{isa, DecodeStrategy::Spread, false, false};
  const KernelQuery invariant{isa, DecodeStrategy::Spread, true, true};
  for (const auto& [g, q] :
       {std::pair{matmul_graph(DType::Q4_0), no_repack}, std::pair{matmul_graph(DType::F16), invariant},
        std::pair{matmul_graph(DType::Q4_0, false, false), spread}}) {
    auto same = choose(g, q);
    ASSERT_TRUE(same.ok()) << same.error().message;
    EXPECT_EQ(same->repack, nullptr);
    EXPECT_EQ(same->data, same->base);
  }
}

TEST(KernelTable, AMissingEntryNamesTheOpAndTypes) {
  // An exp over f16 (no builder makes one: the table is asked about a node as it stands).
  graph::Graph g;
  g.nodes.push_back({Op::Input, {}, graph::NoAttrs{}, Shape{Dim::constant(4)}, DType::F16, "x"});
  g.nodes.push_back({Op::Exp, {0}, graph::NoAttrs{}, Shape{Dim::constant(4)}, DType::F16, "e"});
  auto c = choose_kernel(g, g.nodes[1], {Isa::Scalar, DecodeStrategy::Spread, true, false});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::Unsupported);
  EXPECT_NE(c.error().message.find("cpu: no kernel for exp(f16)"), std::string::npos) << c.error().message;
  EXPECT_FALSE(has_kernel(Op::Exp, {DType::F16}, Isa::Avx512));
  EXPECT_TRUE(has_kernel(Op::Exp, {DType::F32}, Isa::Scalar));
}

}  // namespace
}  // namespace glass::backend::cpu
