// Portable matmul kernels for every weight type: one dot product per (weight row, activation row),
// integer block sums as in ggml's generic vec_dot_*_q8_* (formulas in matmul.h and unpack.h).
#include "backend/cpu/kernels/matmul.h"
#include "backend/cpu/kernels/unpack.h"
#include "formats/half.h"

namespace glass::backend::cpu::kernels {
namespace {

using graph::DType;

inline float h2f(uint16_t h) { return formats::f16_to_f32(h); }
// A legacy block's scale or offset: f16 in ggml's blocks, f32 in Q8_A's.
inline float block_float(const uint8_t (&h)[2]) { return h2f(f16_bits(h)); }
inline float block_float(const uint8_t (&f)[4]) { return q::load_f32(f); }

inline int32_t dot32(const int8_t* w, const int8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < 32; ++j) s += w[j] * a[j];
  return s;
}

// Legacy types against q8_0 / q8_1 blocks.
template <class Block, void (*Unpack)(const Block&, int8_t*), bool kHasMin>
float dot_legacy(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* wb = reinterpret_cast<const Block*>(w);
  const auto* ab = reinterpret_cast<const ActQ8*>(a);
  float sum = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < k / 32; ++b) {
    Unpack(wb[b], q);
    const float dw = block_float(wb[b].d);
    sum += static_cast<float>(dot32(q, ab[b].qs)) * (dw * ab[b].d);
    if constexpr (kHasMin) sum += block_float(wb[b].m) * ab[b].s;
  }
  return sum;
}

// ggml's vec_dot_mxfp4_q8_0: the table's integers against the activations', scaled by the block's
// halved power of two and the activations' scale.
float dot_mxfp4(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* wb = reinterpret_cast<const q::BlockMXFP4*>(w);
  const auto* ab = reinterpret_cast<const ActQ8*>(a);
  float sum = 0.0f;
  int8_t q[32];
  for (int64_t b = 0; b < k / 32; ++b) {
    unpack_mxfp4(wb[b], q);
    sum += static_cast<float>(dot32(q, ab[b].qs)) * (q::e8m0_to_f32_half(wb[b].e) * ab[b].d);
  }
  return sum;
}

float dot_q8_0(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* wb = reinterpret_cast<const q::BlockQ8_0*>(w);
  const auto* ab = reinterpret_cast<const ActQ8*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / 32; ++b)
    sum += static_cast<float>(dot32(wb[b].qs, ab[b].qs)) * (h2f(f16_bits(wb[b].d)) * ab[b].d);
  return sum;
}

// K-quants against q8_k blocks: d_a * (d * sum_j scale_j * <q, a>_j - dmin * sum_j min_j * bsum_j).
template <class Block, void (*Unpack)(const Block&, KBlock&)>
float dot_k(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* wb = reinterpret_cast<const Block*>(w);
  const auto* ab = reinterpret_cast<const ActQ8K*>(a);
  float sum = 0.0f;
  KBlock u;
  for (int64_t b = 0; b < k / 256; ++b) {
    Unpack(wb[b], u);
    int32_t isum = 0, msum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t s = 0;
      for (int l = 0; l < 16; ++l) s += u.q[j * 16 + l] * ab[b].qs[j * 16 + l];
      isum += u.scale[j] * s;
      msum += u.min[j] * ab[b].bsums[j];
    }
    sum += h2f(u.d) * ab[b].d * static_cast<float>(isum) - h2f(u.dmin) * ab[b].d * static_cast<float>(msum);
  }
  return sum;
}

float dot_f32(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* x = reinterpret_cast<const float*>(w);
  const auto* y = reinterpret_cast<const float*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += x[i] * y[i];
  return sum;
}

template <float (*Cvt)(uint16_t)>
float dot_half(int64_t k, const std::byte* w, const std::byte* a) {
  const auto* x = reinterpret_cast<const uint16_t*>(w);
  const auto* y = reinterpret_cast<const float*>(a);  // rounded through the half type already
  float sum = 0.0f;
  for (int64_t i = 0; i < k; ++i) sum += Cvt(x[i]) * y[i];
  return sum;
}

template <float (*Dot)(int64_t, const std::byte*, const std::byte*)>
void gemm(int64_t k, const std::byte* w, size_t w_stride, int64_t n_w, const std::byte* a, size_t a_stride,
          int64_t n_a, float* out, size_t out_stride) {
  for (int64_t i = 0; i < n_a; ++i)
    for (int64_t j = 0; j < n_w; ++j)
      out[static_cast<size_t>(i) * out_stride + static_cast<size_t>(j)] =
          Dot(k, w + static_cast<size_t>(j) * w_stride, a + static_cast<size_t>(i) * a_stride);
}

constexpr MatmulKernel kKernels[] = {
    {DType::F32, ActType::F32, nullptr, gemm<dot_f32>},
    {DType::F16, ActType::F16, quantize_row_f16, gemm<dot_half<formats::f16_to_f32>>},
    {DType::BF16, ActType::BF16, quantize_row_bf16, gemm<dot_half<formats::bf16_to_f32>>},
    {DType::Q4_0, ActType::Q8_0, quantize_row_q8_0, gemm<dot_legacy<q::BlockQ4_0, unpack_q4_0, false>>},
    {DType::Q4_1, ActType::Q8_1, quantize_row_q8_1, gemm<dot_legacy<q::BlockQ4_1, unpack_q4_1, true>>},
    {DType::Q5_0, ActType::Q8_0, quantize_row_q8_0, gemm<dot_legacy<q::BlockQ5_0, unpack_q5_0, false>>},
    {DType::Q5_1, ActType::Q8_1, quantize_row_q8_1, gemm<dot_legacy<q::BlockQ5_1, unpack_q5_1, true>>},
    {DType::Q8_0, ActType::Q8_0, quantize_row_q8_0, gemm<dot_q8_0>},
    {DType::Q8_A, ActType::Q8_1, quantize_row_q8_1, gemm<dot_legacy<q::BlockQ8_A, unpack_q8_a, true>>},
    {DType::MXFP4, ActType::Q8_0, quantize_row_q8_0, gemm<dot_mxfp4>},
    {DType::IQ4_NL, ActType::Q8_0, quantize_row_q8_0, gemm<dot_legacy<q::BlockIQ4_NL, unpack_iq4_nl, false>>},
    {DType::IQ4_XS, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockIQ4_XS, unpack_iq4_xs>>},
    {DType::Q2_K, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockQ2_K, unpack_q2_k>>},
    {DType::Q3_K, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockQ3_K, unpack_q3_k>>},
    {DType::Q4_K, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockQ4_K, unpack_q4_k>>},
    {DType::Q5_K, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockQ5_K, unpack_q5_k>>},
    {DType::Q6_K, ActType::Q8_K, quantize_row_q8_k, gemm<dot_k<q::BlockQ6_K, unpack_q6_k>>},
};

// The scalar tier's rows of the matmul table (matmul.h): the file layout only.
constexpr auto kRows = [] {
  std::array<MatmulRow, std::size(kKernels)> rows{};
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = {&kKernels[i]};
  return rows;
}();

}  // namespace

std::span<const MatmulRow> matmul_rows_scalar() { return kRows; }

}  // namespace glass::backend::cpu::kernels
