#pragma once
// Instruction-set tiers of the cpu backend's kernels. The kernel table holds a scalar (portable)
// kernel for every entry and faster ones per tier; a backend picks the best tier the running CPU
// supports (detected once, at backend creation) or a lower one when asked (tests run every tier
// the machine has against the ref backend).
#include <cstdint>
#include <string_view>

#include "glass/result.h"

namespace glass::backend::cpu {

enum class Isa : uint8_t {
  Scalar,  // portable C++: x86-64 baseline or any other architecture
  Avx2,    // AVX2 + FMA + F16C
  Avx512,  // AVX-512 F/BW/DQ/VL + VNNI (and AVX2 + FMA + F16C)
  kSentinel,
};

std::string_view isa_name(Isa isa);
// The best tier this CPU runs.
Isa detect_isa();
// A tier by its isa_name(); an error for an unknown name or a tier this CPU does not run.
Result<Isa> parse_isa(std::string_view name);

}  // namespace glass::backend::cpu
