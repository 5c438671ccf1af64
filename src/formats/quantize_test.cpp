// quantize_row: error bounds per type on random rows (checked through the bit-exact dequantizer),
// stability under requantization, input validation, and byte equality with llama-quantize on the
// synthetic fixtures (every tensor of every quantized file, K-quants included).
//
// Bounds, per block, in terms of its values (amax = largest |x|). delta(v) is the f16 rounding
// error of a stored scale v: half an ulp, max(|v| 2^-11, 2^-25) (the second for f16 subnormals,
// which tiny weights reach).
//   q8_0  d = amax/127; x rounds to the nearest level: d/2, plus 127 levels times d's f16 error.
//   q4_0  |d| = amax/8; levels -8..7 with the extreme on -8, so a value near -extreme needs +8 and
//         gets +7: one full step |d|, plus 8 delta(d). q5_0 likewise with 16.
//   q4_1  d = (max-min)/15: d/2, plus 15 delta(d) and the stored min's delta(min). q5_1: 31.
//   f16 / bf16: half an ulp of x (2^-11 / 2^-8 relative; f16 subnormals 2^-25 absolute).
//   K-quants (per 256-weight super-block): an ideal grid for sub-block scale s has steps of amax/nmax
//   (symmetric q3_k: nmax 4, q6_k: 32; asymmetric with min q2_k: 3, q4_k: 15, q5_k: 31, where the
//   range is at most 2 amax over 2 nmax steps). The symmetric types can clamp one step at the far
//   side (as q4_0), the searches trade the extremes for the bulk of the weights, and sub-block
//   scales are stored in 4-8 bits of the super-block maximum. Bound: 1.5 steps (symmetric) and 2
//   half-range steps (asymmetric), i.e. 1.5 amax/nmax and 2 amax/nmax. Measured worst over this
//   test's rows: q2_k 0.39, q3_k 0.243, q4_k 0.112, q5_k 0.055, q6_k 0.040 (times amax) against
//   bounds 0.667, 0.375, 0.133, 0.0645, 0.047.
#include "formats/quantize.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "formats/gguf.h"
#include "formats/quant.h"
#include "support/fixtures.h"

namespace glass::formats {
namespace {

using graph::DType;

const DType kAll[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,   DType::Q5_1,
                      DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,   DType::Q6_K,
                      DType::Q8_A, DType::F16,  DType::BF16, DType::IQ4_NL, DType::IQ4_XS};

double f16_delta(double v) { return std::max(std::fabs(v) * 0x1p-11, 0x1p-25); }

// The largest error the bounds above allow for x[i] of a block x[0..n) of `type`.
double bound(DType type, const float* x, int64_t n, int64_t i) {
  double amax = 0, min = x[0], max = x[0];
  for (int64_t j = 0; j < n; ++j) {
    amax = std::max(amax, static_cast<double>(std::fabs(x[j])));
    min = std::min(min, static_cast<double>(x[j]));
    max = std::max(max, static_cast<double>(x[j]));
  }
  const double slack = 1e-6 * amax;  // f32 arithmetic in the quantizers
  switch (type) {
    case DType::Q8_0: {
      const double d = amax / 127;
      return d / 2 + 127 * f16_delta(d) + slack;
    }
    case DType::Q4_0:
      return amax / 8 + 8 * f16_delta(amax / 8) + slack;
    case DType::Q5_0:
      return amax / 16 + 16 * f16_delta(amax / 16) + slack;
    case DType::Q4_1: {
      const double d = (max - min) / 15;
      return d / 2 + 15 * f16_delta(d) + f16_delta(min) + slack;
    }
    case DType::Q5_1: {
      const double d = (max - min) / 31;
      return d / 2 + 31 * f16_delta(d) + f16_delta(min) + slack;
    }
    case DType::Q8_A: {  // f32 scale and offset
      const double d = (max - min) / 255;
      return d / 2 + slack;
    }
    case DType::Q2_K:
      return 2 * amax / 3;
    case DType::Q3_K:
      return 1.5 * amax / 4;
    case DType::Q4_K:
      return 2 * amax / 15;
    case DType::Q5_K:
      return 2 * amax / 31;
    case DType::Q6_K:
      return 1.5 * amax / 32;
    case DType::IQ4_NL:  // the grid's widest gap is 24 of 254, its ends -127 and 113: measured 0.104 amax
      return 0.14 * amax;
    case DType::IQ4_XS:  // and its sub-block scales in 6 bits of the largest: measured 0.121 amax
      return 0.16 * amax;
    case DType::F16:
      return f16_delta(x[i]);
    case DType::BF16:
      return std::fabs(x[i]) * 0x1p-8;
    default:
      return 0;
  }
}

// Rows of 7 blocks (an odd count) of several kinds: N(0, 0.02) like real weights, uniform, a third
// zeros with one all-zero block, large (N(0, 1000)), tiny (N(0, 1e-3): f16-subnormal scales), and
// one outlier per block.
std::vector<std::vector<float>> rows_for(DType type) {
  const int64_t block = std::max<int64_t>(graph::traits(type).block_size, 32);
  const int64_t n = 7 * block;
  std::vector<std::vector<float>> rows;
  for (int kind = 0; kind < 6; ++kind) {
    for (uint32_t seed = 0; seed < 8; ++seed) {
      std::mt19937 rng(seed * 31 + static_cast<uint32_t>(kind));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) {
        switch (kind) {
          case 1:
            v = uniform(rng);
            break;
          case 3:
            v = 1000.0f * normal(rng);
            break;
          case 4:
            v = 1e-3f * normal(rng);
            break;
          default:
            v = 0.02f * normal(rng);
        }
      }
      if (kind == 2) {
        for (int64_t i = 0; i < n; i += 3) x[static_cast<size_t>(i)] = 0;
        for (int64_t i = 2 * block; i < 3 * block; ++i) x[static_cast<size_t>(i)] = 0;
      }
      if (kind == 5)
        for (int64_t b = 0; b < 7; ++b)
          x[static_cast<size_t>(b * block + (b * 5) % block)] = (b % 2 ? 1.0f : -1.0f);
      rows.push_back(std::move(x));
    }
  }
  return rows;
}

std::vector<uint8_t> quantize(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> q(*graph::dtype_bytes(type, x.size()));
  const Status s = quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(s.ok()) << s.error().message;
  return q;
}

std::vector<float> dequantize(DType type, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  const Status s = dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(n));
  EXPECT_TRUE(s.ok()) << s.error().message;
  return y;
}

TEST(Quantize, RoundTripWithinTheTypeBound) {
  for (DType type : kAll) {
    const int64_t block = std::max<int64_t>(graph::traits(type).block_size, 32);
    for (const auto& x : rows_for(type)) {
      const auto y = dequantize(type, quantize(type, x), x.size());
      for (size_t b = 0; b < x.size(); b += static_cast<size_t>(block)) {
        bool all_zero = true;
        for (int64_t i = 0; i < block; ++i) all_zero = all_zero && x[b + static_cast<size_t>(i)] == 0;
        for (int64_t i = 0; i < block; ++i) {
          const size_t k = b + static_cast<size_t>(i);
          if (all_zero) {
            ASSERT_EQ(y[k], 0.0f) << graph::dtype_name(type) << " zero block " << k;
            continue;
          }
          ASSERT_LE(std::fabs(static_cast<double>(y[k]) - x[k]), bound(type, &x[b], block, i))
              << graph::dtype_name(type) << " element " << k << ": " << x[k] << " -> " << y[k];
        }
      }
    }
  }
}

// A dequantized row lies on the grid it came from. The one-pass types (legacy, f16, bf16) find
// that grid again: the bytes repeat exactly (q8_a's f32 scale and offset: the values, to f32 rounding). The
// K-quant searches may pick another grid (their candidates and weights depend on the values), so a second
// round trip drifts: it must stay close to the original, within 1.5x (q2_k) or 1.3x (the others) the first
// round trip's L2 error. Measured worst over 180 rows of these kinds: q2_k 1.40, q3_k 1.12, q4_k 1.01,
// q5_k 1.11, q6_k 1.21. IQ4_NL and IQ4_XS search their scales too (1.10 and 1.03).
TEST(Quantize, RequantizingIsStable) {
  for (DType type : kAll) {
    for (const auto& x : rows_for(type)) {
      const auto q = quantize(type, x);
      const auto y = dequantize(type, q, x.size());
      const auto q2 = quantize(type, y);
      if (type == DType::Q8_A) {  // f32 scale and offset: the grid comes back to within f32 rounding
        const auto y2 = dequantize(type, q2, x.size());
        double amax = 0;
        for (const float v : y) amax = std::max(amax, static_cast<double>(std::fabs(v)));
        for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y2[i], y[i], 1e-5 * amax) << i;
        continue;
      }
      if ((graph::traits(type).block_size == 32 && type != DType::IQ4_NL) || !graph::traits(type).quantized) {
        ASSERT_EQ(q, q2) << graph::dtype_name(type);
        continue;
      }
      const auto y2 = dequantize(type, q2, x.size());
      double first = 0, second = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        first += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
        second += (static_cast<double>(y2[i]) - x[i]) * (static_cast<double>(y2[i]) - x[i]);
      }
      const double drift = type == DType::Q2_K ? 1.5 : 1.3;
      ASSERT_LE(std::sqrt(second), drift * std::sqrt(first)) << graph::dtype_name(type);
    }
  }
}

// Edge cases against ggml's own quantizer (ggml_quantize_chunk of llama.cpp 3f545bec, called from
// Python through ctypes on libggml-base; not glass): x[i] = 0.0004 (i * 37 % 101 - 50) with an
// all-zero 32 at [32, 64), an outlier 0.5 at 100, a 32 of values ~1e-9 at [160, 192) (its scale
// underflows f16 to 0 while its levels follow the f32 scale) and an all-zero 256 at [256, 512)
// (IQ4_XS stores d = -0 there, scale bytes 0xaaaa / 0: every sub-block scale 0 + 32).
TEST(Quantize, Iq4MatchesGgmlOnEdgeCases) {
  std::vector<float> x(512);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) * 0.0004f;
  for (size_t i = 32; i < 64; ++i) x[i] = 0;
  x[100] = 0.5f;
  for (size_t i = 160; i < 192; ++i) x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) * 2e-11f;
  for (size_t i = 256; i < 512; ++i) x[i] = 0;
  auto hex = [](const std::vector<uint8_t>& b) {
    std::string s;
    for (uint8_t v : b) s += fmt::format("{:02x}", v);
    return s;
  };
  EXPECT_EQ(
      hex(quantize(DType::IQ4_NL, x)),
      "7609e035acf157ce1369df249be136adf258000088888888888888888888888888888888490947be1269df248be035ad"
      "f157ce137adf089c88888888808888887888888888888888688931ec8520db641eb942fda731ec751fca00007aef35ac"
      "f147ce0269df248be035adf11109259cf147be0269df138be035adf147ce67891fc953fea731ec8520db641eb942fda7"
      "000088888888888888888888888888888888000088888888888888888888888888888888000088888888888888888888"
      "888888888888000088888888888888888888888888888888000088888888888888888888888888888888000088888888"
      "888888888888888888888888000088888888888888888888888888888888000088888888888888888888888888888888");
  EXPECT_EQ(hex(quantize(DType::IQ4_XS, x)),
            "08082a6901010ff1f024bdf047df016aef139cf025bef0488888888888888888888888888888888836cf0159ef038cf0"
            "25bef047df016aef8888888880888888788888888888888820fd8400ec520fc931fea610fd740feb8888888888888888"
            "888888888888888814adf036ce0159ef028cf024bdf047df0fda41ffb720fd8400ec520fc931fea60080aaaa00000000"
            "888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888"
            "888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888888"
            "8888888888888888888888888888888888888888888888888888888888888888");
}

// MXFP4 against ggml_quantize_chunk likewise, on x[i] = 0.0004 (i * 37 % 101 - 50) with an all-zero
// block, amax just below 1 and just below 1024 (log2f rounds up to the power: exponents 124 and 135,
// as ggml computes them), a block of f32 subnormals (the exponent wraps to 253, as ggml's cast does on
// x86), a large block, and -0 beside an exact table value.
TEST(Quantize, Mxfp4MatchesGgmlOnEdgeCases) {
  std::vector<float> x(256);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) * 0.0004f;
  for (size_t i = 32; i < 64; ++i) x[i] = 0;
  x[64] = 1.0f - 0x1p-24f;
  x[96] = 1024.0f - 0x1p-14f;
  for (size_t i = 128; i < 160; ++i) x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) * 1e-40f;
  for (size_t i = 160; i < 192; ++i) x[i] = static_cast<float>(static_cast<int>(i * 37 % 101) - 50) * 3.0f;
  x[192] = -0.0f;
  x[193] = 0.75f;
  std::string hex;
  for (uint8_t v : quantize(DType::MXFP4, x)) hex += fmt::format("{:02x}", v);
  EXPECT_EQ(hex,
            "776fdb246eb945ed9156dc136eca357eb000000000000000000000000000000000007c07000000000000000000000000"
            "0000008706000000000000000000000000000000fd00000000000000000000000000000000840256db146ec935eda156"
            "dc036eca246e7c00070000000000000000000000000000776ec935eda156ec0367db246ec945eda1");
}

TEST(Quantize, F32IsACopy) {
  const std::vector<float> x = {1.5f, -0.0f, 3e38f, -1e-40f};
  const auto q = quantize(DType::F32, x);
  EXPECT_EQ(std::memcmp(q.data(), x.data(), q.size()), 0);
}

TEST(Quantize, RejectsBadInput) {
  std::vector<float> x(256, 0.5f);
  std::vector<uint8_t> out(1024, 0xab);
  const std::vector<uint8_t> untouched = out;
  auto fails = [&](DType type, int64_t n, ErrorCode code, const std::string& text) {
    const Status s = quantize_row(type, x.data(), out.data(), n);
    ASSERT_FALSE(s.ok()) << graph::dtype_name(type);
    EXPECT_EQ(s.error().code, code);
    EXPECT_NE(s.error().message.find(text), std::string::npos) << s.error().message;
    EXPECT_EQ(out, untouched);
  };
  fails(DType::Q4_K, 255, ErrorCode::InvalidArgument, "block size 256");
  fails(DType::Q8_0, -32, ErrorCode::InvalidArgument, "n = -32");
  fails(DType::I32, 4, ErrorCode::Unsupported, "i32");
  x[37] = std::nanf("");
  fails(DType::Q8_0, 64, ErrorCode::InvalidArgument, "index 37 is not finite");
  fails(DType::F32, 64, ErrorCode::InvalidArgument, "index 37 is not finite");
  x[37] = 0.5f;
  x[5] = -70000.0f;  // beyond f16: the f16 scales (and q4_1's stored min) would overflow
  fails(DType::Q4_1, 32, ErrorCode::InvalidArgument, "index 5 is beyond");
  fails(DType::F16, 32, ErrorCode::InvalidArgument, "index 5 is beyond");
  EXPECT_TRUE(quantize_row(DType::BF16, x.data(), out.data(), 32).ok());
  EXPECT_TRUE(quantize_row(DType::F32, x.data(), out.data(), 32).ok());
}

// The synthetic llama fixtures were made by llama-quantize from llama-gqa-f32.gguf: quantizing each
// F32 tensor to the type llama-quantize chose gives its bytes exactly.
class QuantizeFixtures : public test::WithSharedFixtures {};

TEST_F(QuantizeFixtures, SameBytesAsLlamaQuantize) {
  const auto dir = fixtures_ / "models" / "synthetic";
  auto src = GgufFile::open(dir / "llama-gqa-f32.gguf");
  ASSERT_TRUE(src.ok()) << src.error().message;
  int compared = 0;
  // The weight types of issue 53: llama-quantize's files in the repository (weight-types/README.md).
  const auto in_repo = test::source_dir() / "tests/fixtures/models/weight-types";
  for (const char* kind : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_m", "q4_k_m",
                           "q5_k_m", "q6_k", "iq4_nl", "iq4_xs"}) {
    const bool repo = std::string_view(kind).starts_with("iq");
    auto f = GgufFile::open((repo ? in_repo : dir) / (std::string("llama-gqa-") + kind + ".gguf"));
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const GgufTensorInfo& t : f->tensors()) {
      const GgufTensorInfo* s = src->find_tensor(t.name);
      ASSERT_NE(s, nullptr) << t.name;
      ASSERT_EQ(s->dtype, DType::F32);
      int64_t n = 1;
      for (int64_t d : s->shape) n *= d;
      std::vector<uint8_t> out(t.nbytes);
      ASSERT_TRUE(quantize_row(t.dtype, static_cast<const float*>(s->data), out.data(), n).ok());
      ASSERT_EQ(std::memcmp(out.data(), t.data, t.nbytes), 0)
          << kind << " " << t.name << " (" << graph::dtype_name(t.dtype) << ")";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 14 * 21);
}

}  // namespace
}  // namespace glass::formats

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "formats/quant_mix.h"
#include "formats/quantize_file.h"

namespace glass::formats {
namespace {

std::vector<char> file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The 2026 families' Q8_0 and Q4_K_M files (and SmolLM3's IQ4_XS, gpt-oss's MXFP4_MOE) in the repository were
// written by llama-quantize from their F32 twins (tests/fixtures/reference/synthetic-2026/README.md): `glass
// quantize` writes the same file, byte for byte, tensors in llama.cpp's loader order though the F32 files
// list token_embd before output_norm.
TEST(QuantizeLlamaOrder, SameFilesAsLlamaQuantizeForThe2026Families) {
  const auto dir = test::source_dir() / "tests/fixtures/models/synthetic-2026";
  const auto out_dir = std::filesystem::temp_directory_path() / "glass-quantize-2026";
  std::filesystem::create_directories(out_dir);
  int compared = 0;
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* family : {"smollm3", "lfm2", "qwen35", "qwen35moe", "gemma4", "gemma4moe", "gptoss"})
    for (const char* type : {"q8_0", "q4_k_m"}) files.emplace_back(family, type);
  files.emplace_back("smollm3", "iq4_xs");    // every row falls back to IQ4_NL, the output to Q8_0
  files.emplace_back("gptoss", "mxfp4_moe");  // the experts MXFP4, every other matrix Q8_0
  for (const auto& [family, type] : files) {
    QuantizeOptions o;
    o.ftype = *file_type_from_name(type);
    const auto out = out_dir / fmt::format("{}-{}.gguf", family, type);
    auto r = quantize_gguf(dir / fmt::format("{}-f32.gguf", family), out, o);
    ASSERT_TRUE(r.ok()) << family << " " << type << ": " << r.error().message;
    EXPECT_EQ(file_bytes(out), file_bytes(dir / fmt::format("{}-{}.gguf", family, type)))
        << family << " " << type;
    std::filesystem::remove(out);
    ++compared;
  }
  EXPECT_EQ(compared, 16);
  auto f32 = GgufFile::open(dir / "smollm3-f32.gguf");
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(f32->tensors().front().name, "token_embd.weight");  // the order the test is about
  EXPECT_TRUE(llama_loader_order("output_norm.weight", "token_embd.weight"));
  EXPECT_TRUE(llama_loader_order("token_embd.weight", "blk.0.attn_q.weight"));
  EXPECT_TRUE(llama_loader_order("blk.2.ffn_up.weight", "blk.10.attn_k.weight"));
}

}  // namespace
}  // namespace glass::formats
