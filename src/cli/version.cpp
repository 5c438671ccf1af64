// glass --version: what a bug report needs to name the build (version, commit, build type) and
// which kernel tiers it has and this CPU runs.
#include <fmt/format.h>

#include "cli/common.h"
#include "glass/tools.h"

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
  std::string tiers, best;
  for (const CpuKernelTier& t : cpu_kernel_tiers()) {  // best first
    tiers +=
        fmt::format("{}{}{}", tiers.empty() ? "" : ", ", t.name, t.runs_here ? "" : " (not on this CPU)");
    if (t.runs_here && best.empty()) best = t.name;
  }
  return fmt::format(
      "glass {} (commit {}, {} build)\nbackends: cpu, ref (no GPU backend)\ncpu kernel tiers: {}; this CPU "
      "runs {}",
      GLASS_VERSION, GLASS_COMMIT, GLASS_BUILD_TYPE, tiers, best);
}

}  // namespace glass::cli
