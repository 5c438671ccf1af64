// Dequantization of the synthetic llama fixtures (llama-quantize output of one f32 model).
// 1. Bit-exactness: values below were produced by ggml's own dequantize_row_* (ggml-quants.c from
//    llama.cpp, compiled outside this repo) on these files; every tensor of every file matched
//    glass bit for bit when this test was written.
// 2. Closeness to the f32 original, per storage type. Tolerances are the measured worst case over
//    all matrices of all files, rounded up by ~1.4x (weights are N(0, 0.02)):
//      type   max|err| measured  NMSE measured  |  max|err| bound  NMSE bound
//      f16    3.05e-5            4.3e-8         |  5e-5            1e-7
//      bf16   2.44e-4            2.8e-6         |  4e-4            5e-6
//      q8_0   3.77e-4            2.9e-5         |  6e-4            5e-5
//      q6_k   1.46e-3            3.2e-4         |  2e-3            5e-4
//      q5_1   2.41e-3            1.5e-3         |  4e-3            2.5e-3
//      q5_k   3.13e-3            1.3e-3         |  4.5e-3          2e-3
//      q5_0   4.32e-3            1.8e-3         |  6e-3            3e-3
//      q4_1   4.91e-3            6.2e-3         |  7e-3            9e-3
//      q4_k   6.34e-3            5.1e-3         |  9e-3            8e-3
//      q4_0   8.69e-3            7.6e-3         |  1.2e-2          1.1e-2
//      q3_k   1.33e-2            2.3e-2         |  2e-2            3.5e-2
//      q2_k   3.19e-2            8.8e-2         |  4.5e-2          0.12
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>

#include "formats/gguf.h"
#include "formats/quant.h"
#include "support/fixtures.h"

namespace glass::formats {
namespace {

using graph::DType;

std::vector<float> dequantize(const GgufTensorInfo& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  const Status s = dequantize_row(t.dtype, t.data, out.data(), n);
  EXPECT_TRUE(s.ok()) << t.name << ": " << s.error().message;
  return out;
}

class QuantModels : public test::WithSharedFixtures {
 protected:
  std::filesystem::path model(const std::string& kind) const {
    return fixtures_ / "models" / "synthetic" / ("llama-gqa-" + kind + ".gguf");
  }
};

const char* const kKinds[] = {"f32",  "f16",  "bf16",   "q8_0",   "q4_0",   "q4_1", "q5_0",
                              "q5_1", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"};

TEST_F(QuantModels, EveryTensorOfEveryFileDequantizes) {
  for (const char* kind : kKinds) {
    auto f = GgufFile::open(model(kind));
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_EQ(f->tensors().size(), 21u) << kind;
    for (const auto& t : f->tensors()) {
      const auto v = dequantize(t);
      for (float x : v) ASSERT_TRUE(std::isfinite(x)) << kind << " " << t.name;
    }
  }
}

struct OracleValue {
  const char* kind;
  const char* tensor;
  DType dtype;
  size_t index;
  uint32_t bits;  // ggml's dequantized value
};

constexpr OracleValue kOracle[] = {
    {"q8_0", "token_embd.weight", DType::Q8_0, 17, 0x3d0ecc00},
    {"q8_0", "blk.0.attn_q.weight", DType::Q8_0, 65535, 0xbccdd780},
    {"q4_0", "token_embd.weight", DType::Q4_0, 17, 0x3d152400},
    {"q4_0", "blk.0.attn_q.weight", DType::Q4_0, 1000, 0x3b666000},
    {"q4_1", "token_embd.weight", DType::Q4_1, 131071, 0x3a8b0000},
    {"q4_1", "blk.0.attn_q.weight", DType::Q4_1, 65535, 0xbcd79800},
    {"q5_0", "token_embd.weight", DType::Q5_0, 0, 0xbd063a00},
    {"q5_0", "blk.0.attn_q.weight", DType::Q5_0, 255, 0xbb5bc000},
    {"q5_1", "token_embd.weight", DType::Q5_1, 131071, 0x37a00000},
    {"q5_1", "blk.0.attn_q.weight", DType::Q5_1, 1, 0xba380000},
    {"q2_k", "token_embd.weight", DType::Q2_K, 17, 0x3cdfb000},
    {"q2_k", "blk.0.attn_q.weight", DType::Q2_K, 65535, 0xbcfe0000},
    {"q3_k_m", "token_embd.weight", DType::Q3_K, 255, 0xbc06ee00},
    {"q3_k_m", "blk.0.attn_q.weight", DType::Q3_K, 65535, 0xbcca9b00},
    {"q4_k_m", "token_embd.weight", DType::Q4_K, 0, 0xbd10bd20},
    {"q4_k_m", "blk.0.attn_q.weight", DType::Q4_K, 1000, 0x3b91b900},
    {"q5_k_m", "token_embd.weight", DType::Q5_K, 131071, 0x3a3d8800},
    {"q5_k_m", "blk.0.attn_q.weight", DType::Q5_K, 17, 0xbc24fe00},
    {"q6_k", "token_embd.weight", DType::Q6_K, 255, 0xbc3b9f80},
    {"q6_k", "blk.0.attn_q.weight", DType::Q6_K, 65535, 0xbcc8fa00},
};

TEST_F(QuantModels, BitExactWithGgml) {
  for (const auto& o : kOracle) {
    auto f = GgufFile::open(model(o.kind));
    ASSERT_TRUE(f.ok()) << f.error().message;
    const GgufTensorInfo* t = f->find_tensor(o.tensor);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->dtype, o.dtype) << o.kind << " " << o.tensor;
    const auto v = dequantize(*t);
    EXPECT_EQ(std::bit_cast<uint32_t>(v.at(o.index)), o.bits)
        << o.kind << " " << o.tensor << "[" << o.index << "]";
  }
}

struct Tolerance {
  double max_abs;
  double nmse;
};

const std::map<DType, Tolerance>& tolerances() {
  static const std::map<DType, Tolerance> kTol = {
      {DType::F16, {5e-5, 1e-7}},      {DType::BF16, {4e-4, 5e-6}},   {DType::Q8_0, {6e-4, 5e-5}},
      {DType::Q6_K, {2e-3, 5e-4}},     {DType::Q5_1, {4e-3, 2.5e-3}}, {DType::Q5_K, {4.5e-3, 2e-3}},
      {DType::Q5_0, {6e-3, 3e-3}},     {DType::Q4_1, {7e-3, 9e-3}},   {DType::Q4_K, {9e-3, 8e-3}},
      {DType::Q4_0, {1.2e-2, 1.1e-2}}, {DType::Q3_K, {2e-2, 3.5e-2}}, {DType::Q2_K, {4.5e-2, 0.12}},
  };
  return kTol;
}

TEST_F(QuantModels, CloseToTheF32Original) {
  auto ref = GgufFile::open(model("f32"));
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  for (const char* kind : kKinds) {
    if (std::string(kind) == "f32") continue;
    auto f = GgufFile::open(model(kind));
    ASSERT_TRUE(f.ok()) << f.error().message;
    int checked = 0;
    for (const auto& t : f->tensors()) {
      const GgufTensorInfo* r = ref->find_tensor(t.name);
      ASSERT_NE(r, nullptr) << t.name;
      ASSERT_EQ(t.shape, r->shape) << kind << " " << t.name;
      const auto got = dequantize(t);
      const auto want = dequantize(*r);
      if (t.dtype == DType::F32) {  // norms stay f32: identical
        EXPECT_EQ(got, want) << kind << " " << t.name;
        continue;
      }
      double max_abs = 0, err2 = 0, ref2 = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const double d = static_cast<double>(got[i]) - want[i];
        max_abs = std::max(max_abs, std::fabs(d));
        err2 += d * d;
        ref2 += static_cast<double>(want[i]) * want[i];
      }
      const Tolerance tol = tolerances().at(t.dtype);
      EXPECT_LE(max_abs, tol.max_abs) << kind << " " << t.name << " (" << graph::dtype_name(t.dtype) << ")";
      EXPECT_LE(err2 / ref2, tol.nmse) << kind << " " << t.name << " (" << graph::dtype_name(t.dtype) << ")";
      ++checked;
    }
    EXPECT_GE(checked, 15) << kind;  // token_embd, output and the 7 matrices of each of 2 layers
  }
}

// Whole tensors of the IQ4 files in the repository (tests/fixtures/models/weight-types, llama-quantize's)
// against ggml's dequantize_row_iq4_nl / _iq4_xs (libggml-base of llama.cpp 3f545bec, called through
// Python's ctypes): FNV-1a 64 over the float bits, in order.
TEST(QuantModelsIq4, WholeTensorsBitExactWithGgml) {
  struct Hash {
    const char* kind;
    const char* tensor;
    uint64_t fnv;
  };
  constexpr Hash kHashes[] = {
      {"iq4_nl", "token_embd.weight", 0x9da9796e4ad431e5ull},
      {"iq4_nl", "blk.0.attn_q.weight", 0x6baa0046abf63825ull},
      {"iq4_nl", "blk.1.ffn_down.weight", 0x6082b8bf888ed3e5ull},
      {"iq4_xs", "token_embd.weight", 0x9e1ebd11b2d9cbb5ull},
      {"iq4_xs", "blk.0.attn_q.weight", 0xc6606e9f10b62ecdull},
      {"iq4_xs", "blk.1.ffn_down.weight", 0x62c2986c6a8b95ddull},
  };
  for (const Hash& h : kHashes) {
    auto f = GgufFile::open(test::source_dir() / "tests/fixtures/models/weight-types" /
                            (std::string("llama-gqa-") + h.kind + ".gguf"));
    ASSERT_TRUE(f.ok()) << f.error().message;
    const GgufTensorInfo* t = f->find_tensor(h.tensor);
    ASSERT_NE(t, nullptr) << h.tensor;
    EXPECT_EQ(graph::dtype_name(t->dtype), std::string_view(h.kind).substr(0, 6))
        << h.kind << " " << h.tensor;
    uint64_t fnv = 0xcbf29ce484222325ull;
    for (const float v : dequantize(*t)) {
      fnv ^= std::bit_cast<uint32_t>(v);
      fnv *= 0x100000001b3ull;
    }
    EXPECT_EQ(fnv, h.fnv) << h.kind << " " << h.tensor;
  }
}

}  // namespace
}  // namespace glass::formats
