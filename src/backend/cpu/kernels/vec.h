#pragma once
// A portable f32 vector (GCC/Clang vector extensions) for kernels written once and compiled per ISA
// (gemma.cpp's approach with its portable vector API): one register of the tier's width, 16 lanes
// (zmm) under -mavx512f, 8 (ymm) under -mavx2, 4 (xmm) on the x86-64 baseline. Wider vectors than
// the ISA's registers are not split well: GCC 12 lowers a 64-byte vector under -mavx2 to scalar
// loads and stores through the stack (the AVX2 tier's attention ran ~30x slower than AVX-512's).
// Everything here has internal linkage: per-ISA files include it, and no out-of-line copy built for
// a wide ISA may be shared with code that runs on a narrower one.
#include <cstdint>
#include <cstring>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

// By-value vectors between functions of one file: the ABI note -Wpsabi gives does not apply. GCC
// reports it when the file ends, so it stays off for the rest of the including file.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace glass::backend::cpu::kernels {
namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX2__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float f32v __attribute__((vector_size(4 * kLanes)));    // NOLINT(modernize-use-using): attribute
typedef int32_t i32v __attribute__((vector_size(4 * kLanes)));  // NOLINT(modernize-use-using)

inline f32v load(const float* p) {
  f32v v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(float* p, f32v v) { std::memcpy(p, &v, sizeof(v)); }
inline f32v splat(float x) { return f32v{} + x; }

inline float hsum(f32v v) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(v));
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  return lanes[0];
}

inline float hmax(f32v v) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(v));
  float m = lanes[0];
  for (int i = 1; i < kLanes; ++i) m = lanes[i] > m ? lanes[i] : m;
  return m;
}

inline f32v vmax(f32v a, f32v b) { return a > b ? a : b; }
inline f32v vmin(f32v a, f32v b) { return a < b ? a : b; }

// 8 lanes of f32 and f64, for sums kept in double.
typedef float f32x8 __attribute__((vector_size(32)));   // NOLINT(modernize-use-using)
typedef double f64x8 __attribute__((vector_size(64)));  // NOLINT(modernize-use-using)

inline f32v fmadd(f32v a, f32v b, f32v c) {
#if defined(__AVX512F__)
  return reinterpret_cast<f32v>(
      _mm512_fmadd_ps(reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(c)));
#elif defined(__FMA__)
  return reinterpret_cast<f32v>(
      _mm256_fmadd_ps(reinterpret_cast<__m256>(a), reinterpret_cast<__m256>(b), reinterpret_cast<__m256>(c)));
#else
  return a * b + c;  // the portable tier rounds twice
#endif
}

inline i32v as_int(f32v v) {
  i32v i;
  std::memcpy(&i, &v, sizeof(i));
  return i;
}
inline f32v as_float(i32v v) {
  f32v f;
  std::memcpy(&f, &v, sizeof(f));
  return f;
}

// e^x exactly as llama.cpp's AVX-512 ggml_v_expf computes it (ARM optimized-routines expf: x = n ln2
// + b, a degree-5 polynomial in b, then j * 2^n; max error 1.45 + 0.5 ulp), so activations that are
// quantized afterwards round the way its references did. |n| > 192 gives 0 or infinity.
inline f32v vexp(f32v x) {
  const f32v r = splat(0x1.8p23f);
  const f32v z = fmadd(x, splat(0x1.715476p+0f), r);
  const f32v n = z - r;
  const f32v b = fmadd(-n, splat(0x1.7f7d1cp-20f), fmadd(-n, splat(0x1.62e4p-1f), x));
  const f32v u = b * b;
  const f32v j = fmadd(fmadd(fmadd(splat(0x1.0e4020p-7f), b, splat(0x1.573e2ep-5f)), u,
                             fmadd(splat(0x1.555e66p-3f), b, splat(0x1.fffdb6p-2f))),
                       u, fmadd(splat(0x1.ffffecp-1f), b, splat(1.0f)));
  // j * 2^n in two exact steps (2^h, 2^(n-h)), so that results near the range ends round once.
  const i32v ni = __builtin_convertvector(n, i32v);
  const i32v h = ni >> 1;
  const f32v s1 = as_float((h + 127) << 23), s2 = as_float((ni - h + 127) << 23);
  const f32v res = j * s1 * s2;
  const i32v big = (n > splat(192.0f)) | (n < splat(-192.0f));
  const f32v alt = n > splat(0.0f) ? splat(__builtin_inff()) : splat(0.0f);
  return big ? alt : res;
}

inline float sexp(float x) {
  float lanes[kLanes] = {x};
  const f32v v = vexp(load(lanes));
  std::memcpy(lanes, &v, sizeof(v));
  return lanes[0];
}

}  // namespace
}  // namespace glass::backend::cpu::kernels
