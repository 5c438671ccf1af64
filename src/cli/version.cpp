// glass --version: what a bug report needs to name the build (version, commit, build type) and
// which kernel tiers it has and this CPU runs.
#include <fmt/format.h>

#include "backend/cpu/isa.h"
#include "cli/common.h"

#ifndef GLASS_VERSION
#define GLASS_VERSION "unknown"
#endif
#ifndef GLASS_COMMIT
#define GLASS_COMMIT "unknown"
#endif
#ifndef GLASS_BUILD_TYPE
#define GLASS_BUILD_TYPE "unknown"
#endif

namespace glass::cli {

std::string version_text() {
  namespace cpu = backend::cpu;
  std::string tiers;
  for (auto t = static_cast<uint8_t>(cpu::Isa::kSentinel); t-- > 0;) {
    const auto isa = static_cast<cpu::Isa>(t);
    tiers += fmt::format("{}{}{}", tiers.empty() ? "" : ", ", cpu::isa_name(isa),
                         cpu::parse_isa(cpu::isa_name(isa)) ? "" : " (not on this CPU)");
  }
  return fmt::format(
      "glass {} (commit {}, {} build)\nbackends: cpu, ref (no GPU backend)\ncpu kernel tiers: {}; this CPU "
      "runs {}",
      GLASS_VERSION, GLASS_COMMIT, GLASS_BUILD_TYPE, tiers, cpu::isa_name(cpu::detect_isa()));
}

}  // namespace glass::cli
