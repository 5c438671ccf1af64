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

// How a decode matvec reads its weights; which reads fastest depends on the machine, and results
// are the same bits under every strategy (each output sums in the same order):
//  * Spread: the 16-row groups of the k-quant layouts (q2_kx16 .. q6_kx16) one at a time, prefetched
//    4 KiB ahead; the legacy layouts (q4_0x16 .. q8_0x16) four groups a quarter of the task apart.
//    AMD Zen 5 and other CPUs (measured on Zen 5: four k-quant streams halved q4_kx16's read rate,
//    57 -> 30 GB/s at 2 threads).
//  * Lockstep: every 16-row layout four groups at once, prefetched 2 KiB ahead. Intel CPUs (a Xeon,
//    family 6 model 167: the 1B Q4_K_M decoded 17-25% faster than Spread).
//  * Sequential: each thread reads its share as one sequential stream: every 16-row layout one group
//    at a time, row-major f32 matrices one row at a time, and Q6_K in the file's layout (its 16-row
//    kernel does more vector work per byte than a double-pumped AVX-512 unit hides behind the
//    reads); no software prefetch but for q2_kx16, q3_kx16 and Q6_K (the hardware's follows one
//    stream). AMD Zen 4 (family 25 with AVX-512), where each read faster than Spread: 1B Q4_0
//    decode +26% without the lockstep and +17% more without the prefetch, Q6_K's output head
//    +15-34%, SmolLM2 F32 +40%, 1B F16 at 96% of the read bandwidth (docs/performance.md).
enum class DecodeStrategy : uint8_t { Spread, Lockstep, Sequential };

std::string_view decode_strategy_name(DecodeStrategy s);
// The strategy for this CPU: Lockstep on Intel CPUs, Sequential on AMD Zen 4 and Spread on the
// others. (The library reads no environment: the glass command maps GLASS_DECODE_STRATEGY to
// LoadOptions::decode_strategy.)
DecodeStrategy detect_decode_strategy();
// `what` names where the name came from in the error ("decode_strategy", "GLASS_DECODE_STRATEGY").
Result<DecodeStrategy> parse_decode_strategy(std::string_view name, std::string_view what);

}  // namespace glass::backend::cpu
