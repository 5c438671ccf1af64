#include "backend/cpu/isa.h"

#include <fmt/format.h>

#include <cstdlib>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

namespace glass::backend::cpu {

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx512Bf16:
      return "avx512bf16";
    case Isa::kSentinel:
      break;
  }
  return "?";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
namespace {
// cpuid leaf 1: EAX (family, model) and ECX (feature bits); zeros where it fails.
struct Leaf1 {
  unsigned eax = 0, ecx = 0;
};
Leaf1 cpuid_leaf1() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return {};
  return {eax, ecx};
}
// F16C (leaf 1, ECX bit 29): clang 14's __builtin_cpu_supports does not know the name.
bool has_f16c() { return (cpuid_leaf1().ecx & (1u << 29)) != 0; }
}  // namespace
#endif

Isa detect_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512vnni");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return Isa::Avx512Bf16;
  if (avx512) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

Result<Isa> parse_isa(std::string_view name) {
  for (const Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16}) {
    if (isa_name(isa) != name) continue;
    if (isa > detect_isa())
      return make_error(ErrorCode::Unsupported,
                        fmt::format("cpu backend: this CPU does not run the {} tier (best: {})", name,
                                    isa_name(detect_isa())));
    return isa;
  }
  return make_error(
      ErrorCode::InvalidArgument,
      fmt::format("cpu backend: unknown kernel tier '{}' (avx512bf16, avx512, avx2 or scalar)", name));
}

std::string_view decode_strategy_name(DecodeStrategy s) {
  switch (s) {
    case DecodeStrategy::Lockstep:
      return "lockstep";
    case DecodeStrategy::Sequential:
      return "sequential";
    case DecodeStrategy::Spread:
      break;
  }
  return "spread";
}

Result<DecodeStrategy> parse_decode_strategy(std::string_view name, std::string_view what) {
  for (const DecodeStrategy s :
       {DecodeStrategy::Spread, DecodeStrategy::Lockstep, DecodeStrategy::Sequential})
    if (decode_strategy_name(s) == name) return s;
  return make_error(
      ErrorCode::InvalidArgument,
      fmt::format("{}: unknown decode strategy '{}' (spread, lockstep or sequential)", what, name));
}

namespace {
// AMD's family number (base + extended, as the vendor documents it), or 0 elsewhere.
unsigned amd_family() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (!__builtin_cpu_is("amd")) return 0;
  const unsigned eax = cpuid_leaf1().eax;
  const unsigned base = (eax >> 8) & 0xF;
  return base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
#else
  return 0;
#endif
}
}  // namespace

DecodeStrategy detect_decode_strategy() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel")) return DecodeStrategy::Lockstep;
  // Family 25 (0x19) is Zen 3 and Zen 4; only Zen 4 has AVX-512, run as two 256-bit halves.
  if (amd_family() == 25 && __builtin_cpu_supports("avx512f")) return DecodeStrategy::Sequential;
#endif
  return DecodeStrategy::Spread;
}

}  // namespace glass::backend::cpu
