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
  // Avx512 + BF16 (vdpbf16ps): the avx512 tier with its own bf16 matmuls (matmul_avx512bf16.cpp);
  // every other kernel is the avx512 tier's.
  Avx512Bf16,
  kSentinel,
};

std::string_view isa_name(Isa isa);
// The best tier this CPU runs.
Isa detect_isa();
// A tier by its isa_name(); an error for an unknown name or a tier this CPU does not run.
Result<Isa> parse_isa(std::string_view name);

// How a decode matvec walks the 16-row groups of the k-quant layouts (q2_kx16 .. q6_kx16, AVX-512):
// one group at a time with prefetches 4 KiB ahead (Spread), or four groups a quarter of the task
// apart, block by block, with prefetches 2 KiB ahead (Lockstep). Which reads faster depends on the
// machine, and results are the same bits either way (each group sums in the same order): on Zen 5
// Lockstep halved q4_kx16's read rate (57 -> 30 GB/s at 2 threads); on an Intel Xeon (family 6
// model 167) it decoded the 1B Q4_K_M 17-25% faster (docs/performance.md). The legacy layouts
// (q4_0x16 .. q8_0x16) walk in lockstep on every machine.
enum class DecodeStrategy : uint8_t { Spread, Lockstep };

std::string_view decode_strategy_name(DecodeStrategy s);
// The strategy for this CPU: GLASS_DECODE_STRATEGY (spread or lockstep) when set, else Lockstep on
// Intel CPUs and Spread on the others; an unknown name in the variable is an error.
Result<DecodeStrategy> detect_decode_strategy();
// `what` names where the name came from in the error ("GLASS_DECODE_STRATEGY", "--decode-strategy").
Result<DecodeStrategy> parse_decode_strategy(std::string_view name, std::string_view what);

}  // namespace glass::backend::cpu
